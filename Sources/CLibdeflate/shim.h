// libdeflate, for gzip response bodies: one call per whole body, no stream state to reset.
#ifndef DELTAFEED_CLIBDEFLATE_SHIM_H
#define DELTAFEED_CLIBDEFLATE_SHIM_H

#include <libdeflate.h>

#endif

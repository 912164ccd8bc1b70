// libpq, PostgreSQL's own C client (Debian: libpq-dev; pkg-config adds -I/usr/include/postgresql).
#ifndef DELTAFEED_CLIBPQ_SHIM_H
#define DELTAFEED_CLIBPQ_SHIM_H

#include <libpq-fe.h>

/// The field codes of PQresultErrorField, which libpq defines as character macros.
static const int clpq_diag_sqlstate = 'C';
static const int clpq_diag_constraint_name = 'n';

#endif

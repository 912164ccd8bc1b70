// zlib, for reading gzip bodies (the client, the snapshot log): a stream that can stop at a
// size limit. Bodies are written with libdeflate (CLibdeflate).
#ifndef DELTAFEED_CZLIB_SHIM_H
#define DELTAFEED_CZLIB_SHIM_H

#include <zlib.h>

/// inflateInit2 with the library's version and struct size filled in (a macro in zlib.h).
static inline int czlib_inflate_init(z_stream *stream, int window_bits) {
    return inflateInit2(stream, window_bits);
}

#endif

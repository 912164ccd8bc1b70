// zlib, for gzip response bodies (the server) and reading them (the client).
#ifndef DELTAFEED_CZLIB_SHIM_H
#define DELTAFEED_CZLIB_SHIM_H

#include <zlib.h>

/// deflateInit2 with the library's version and struct size filled in (a macro in zlib.h).
static inline int czlib_deflate_init(z_stream *stream, int level, int window_bits) {
    return deflateInit2(stream, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
}

/// inflateInit2 with the library's version and struct size filled in (a macro in zlib.h).
static inline int czlib_inflate_init(z_stream *stream, int window_bits) {
    return inflateInit2(stream, window_bits);
}

#endif

// The part of libevent that EventHTTP uses, plus a few inline helpers for things Swift cannot
// reach directly (the TAILQ macros behind header lists).
#ifndef DELTAFEED_CLIBEVENT_SHIM_H
#define DELTAFEED_CLIBEVENT_SHIM_H

// The C library headers first, so libevent's config (which defines _GNU_SOURCE) cannot give
// fd_set and friends a second, different definition from Swift's Glibc module.
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>
#include <event2/util.h>

/// The first header of a header list, or NULL.
static inline struct evkeyval *cle_headers_first(struct evkeyvalq *headers) {
    return headers == NULL ? NULL : headers->tqh_first;
}

/// The header after `header`, or NULL.
static inline struct evkeyval *cle_headers_next(struct evkeyval *header) {
    return header->next.tqe_next;
}

#endif

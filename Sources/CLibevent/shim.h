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
#include <sys/ioctl.h>

/// The first header of a header list, or NULL.
static inline struct evkeyval *cle_headers_first(struct evkeyvalq *headers) {
    return headers == NULL ? NULL : headers->tqh_first;
}

/// The header after `header`, or NULL.
static inline struct evkeyval *cle_headers_next(struct evkeyval *header) {
    return header->next.tqe_next;
}

/// Bytes received on socket `fd` and not read yet (FIONREAD), or 0 when it cannot tell.
static inline int cle_unread_bytes(int fd) {
    int count = 0;
    return ioctl(fd, FIONREAD, &count) == 0 ? count : 0;
}

/// The request an incoming evhttp connection is reading now, or NULL.
///
/// libevent 2.1 has no call for this: a header callback can only be installed on a request, and
/// the server creates each request inside evhttp with no hook before its headers are parsed. So
/// this reads the connection's request queue through the layout of `struct evhttp_connection` in
/// libevent 2.1.12 (http-internal.h), written out below as the fields before the embedded
/// `struct event retry_ev` and the fields after it (whose size comes from
/// `event_get_struct_event_size()`, so `struct event` stays opaque here). Every answer is checked
/// against public calls first — the layout must give the same bufferevent and server as
/// `evhttp_connection_get_bufferevent` and `evhttp_connection_get_server`, and the request found
/// must belong to `evcon` — and another libevent version gets NULL, so a mismatch degrades to "no
/// header callback" (the checks then run when the request is delivered) instead of reading the
/// wrong memory.
struct cle_evhttp_connection_2_1_12_head {
    void *link_next;
    void **link_previous;
    evutil_socket_t fd;
    struct bufferevent *bufev;
    /* struct event retry_ev follows */
};

struct cle_evhttp_connection_2_1_12_tail {
    char *bind_address;
    ev_uint16_t bind_port;
    char *address;
    ev_uint16_t port;
    size_t max_headers_size;
    ev_uint64_t max_body_size;
    int flags;
    struct timeval timeout;
    int retry_cnt;
    int retry_max;
    struct timeval initial_retry_timeout;
    int state;
    struct evhttp *http_server;
    struct evhttp_request *requests_first;
    struct evhttp_request **requests_last;
};

static inline struct evhttp_request *cle_connection_current_request(struct evhttp_connection *evcon) {
    if (evcon == NULL || event_get_version_number() != 0x02010c00) {
        return NULL;
    }
    const size_t align = _Alignof(struct cle_evhttp_connection_2_1_12_tail);
    size_t tail_offset = sizeof(struct cle_evhttp_connection_2_1_12_head) + event_get_struct_event_size();
    tail_offset = (tail_offset + align - 1) / align * align;
    const struct cle_evhttp_connection_2_1_12_head *head = (const void *)evcon;
    const struct cle_evhttp_connection_2_1_12_tail *tail = (const void *)((const char *)evcon + tail_offset);
    if (head->bufev != evhttp_connection_get_bufferevent(evcon) || tail->http_server != evhttp_connection_get_server(evcon)) {
        return NULL;
    }
    struct evhttp_request *request = tail->requests_first;
    if (request == NULL || evhttp_request_get_connection(request) != evcon) {
        return NULL;
    }
    return request;
}

/// The argument libevent passes to a bufferevent's callbacks (for evhttp, its connection).
static inline void *cle_bufferevent_callback_argument(struct bufferevent *bev) {
    void *argument = NULL;
    bufferevent_getcb(bev, NULL, NULL, NULL, &argument);
    return argument;
}

// libevent publishes the layout of `struct evhttp_request` in event2/http_struct.h (with the
// warning that it may change). Included as is, it would make the struct complete for Swift and
// change every `struct evhttp_request *` from OpaquePointer into a typed pointer; included under
// another name, it gives the same layout to the helpers below and leaves Swift's view opaque.
#define evhttp_request cle_evhttp_request_layout
#include <event2/http_struct.h>
#undef evhttp_request

typedef void (*cle_request_callback)(struct evhttp_request *, void *);
typedef int (*cle_header_callback)(struct evhttp_request *, void *);

/// The request's fields as http_struct.h lays them out, or NULL when they do not agree with the
/// public getters (another libevent build).
static inline struct cle_evhttp_request_layout *cle_request_layout(struct evhttp_request *request) {
    struct cle_evhttp_request_layout *layout = (struct cle_evhttp_request_layout *)(void *)request;
    if (request == NULL
        || layout->evcon != evhttp_request_get_connection(request)
        || layout->input_headers != evhttp_request_get_input_headers(request)
        || layout->output_headers != evhttp_request_get_output_headers(request)
        || layout->input_buffer != evhttp_request_get_input_buffer(request)
        || layout->output_buffer != evhttp_request_get_output_buffer(request)) {
        return NULL;
    }
    return layout;
}

/// Routes a server request through `callback` (called with `argument`, for the complete request
/// and for evhttp's own refusals of it) and gives it `header_callback` (called with `argument`
/// too). Returns the callback the request had, for `callback` to pass normal requests on to, or
/// NULL when the layout check failed and nothing was changed.
static inline cle_request_callback cle_request_hook(struct evhttp_request *request, cle_request_callback callback,
                                                   void *argument, cle_header_callback header_callback) {
    struct cle_evhttp_request_layout *layout = cle_request_layout(request);
    if (layout == NULL) {
        return NULL;
    }
    cle_request_callback previous = (cle_request_callback)layout->cb;
    layout->cb = (void (*)(struct cle_evhttp_request_layout *, void *))callback;
    layout->cb_arg = argument;
    evhttp_request_set_header_cb(request, header_callback);
    return previous;
}

/// Makes evhttp read no chunked body for a request whose headers announced one (some 2.1.12
/// builds decide "chunked" before the header callback, so removing the header is not enough).
static inline void cle_request_forget_chunked(struct evhttp_request *request) {
    struct cle_evhttp_request_layout *layout = cle_request_layout(request);
    if (layout != NULL) {
        layout->chunked = 0;
    }
}

/// The request's HTTP version as major * 256 + minor, or -1 when the layout check fails.
static inline int cle_request_version(struct evhttp_request *request) {
    struct cle_evhttp_request_layout *layout = cle_request_layout(request);
    return layout == NULL ? -1 : layout->major * 256 + layout->minor;
}

/// Answers in HTTP/1.1 a request whose version evhttp could not parse (it would write "HTTP/0.0").
static inline void cle_request_answer_as_http11_if_unparsed(struct evhttp_request *request) {
    struct cle_evhttp_request_layout *layout = cle_request_layout(request);
    if (layout != NULL && layout->major == 0) {
        layout->major = 1;
        layout->minor = 1;
    }
}

#endif

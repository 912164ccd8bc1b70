/* The reference for scripts/bench-http: the smallest libevent evhttp server answering
 * {"status":"ok"} on every path, single-threaded, so the Swift server's /healthz can be compared
 * with C on the same machine in the same run. Usage: hello PORT */
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>

static void answer(struct evhttp_request *request, void *unused) {
    (void)unused;
    struct evbuffer *body = evhttp_request_get_output_buffer(request);
    evbuffer_add(body, "{\"status\":\"ok\"}", 15);
    evhttp_add_header(evhttp_request_get_output_headers(request), "Content-Type", "application/json");
    evhttp_send_reply(request, 200, "OK", NULL);
}

int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 18081;
    struct event_base *base = event_base_new();
    struct evhttp *http = evhttp_new(base);
    evhttp_set_gencb(http, answer, NULL);
    if (evhttp_bind_socket(http, "127.0.0.1", (ev_uint16_t)port) != 0) {
        fprintf(stderr, "cannot bind 127.0.0.1:%d\n", port);
        return 1;
    }
    event_base_dispatch(base);
    return 0;
}

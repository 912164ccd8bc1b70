// Holds many Server-Sent Event streams of deltafeed's live route for scripts/bench-live, on one
// thread (epoll), and timestamps every event it receives (CLOCK_MONOTONIC, the clock Python's
// time.monotonic_ns() reads, so the benchmark compares it with the times writes were
// acknowledged).
//
//   live_client PORT PATHS RECORDS [-s SOURCES] [-i INFLIGHT] [-f FIRST_SOURCE] [-k] [-v] [-d]
//
// PATHS holds one request target per line ("/v1/users/7/feed/live?limit=12"): one stream each.
// Connections come from SOURCES loopback addresses 127.0.1.FIRST_SOURCE... (default 16 from 1)
// so that more streams than one address's ephemeral ports can be open; at most INFLIGHT
// (default 256) are being set up at a time. Every event goes to RECORDS as one line:
//   R stream t_ns bytes id [V ...]       a reset (with -v: the ids of the videos on the page)
//   D stream t_ns bytes id [keys ...]    a delta (with -k: what it carries, see below)
//   X stream t_ns name                   another event (shutdown, gone)
//   J data                               with -d: the data of the reset or delta just recorded
//                                        (its data lines joined), on a line of its own
//   C stream t_ns                        the server closed the stream
//   F stream t_ns status                 the stream was refused (status 0: no connection)
// bytes are the event's bytes as sent (its field lines), without the chunked framing. Keys: a
// video's like count "L:video:count" (video 0 for a patch, which names no video) and a title of
// the form "lv-N" as "T:N". The commands on stdin (one a line):
//   stats   prints "STATS key=value ..." (counters so far)
//   dump    writes "I stream last_event_id" for every stream to RECORDS and flushes it
//   flush   flushes RECORDS
//   quit    closes every stream and exits (so does the end of stdin)
// "READY ..." is printed once every stream is open (its `retry:` line came) or refused.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

enum phase { IDLE, CONNECTING, HEAD, BODY, DONE };
enum chunk_state { SIZE, SIZE_EXT, DATA, DATA_CR, DATA_LF, TRAILER };

struct buffer {
  char *bytes;
  size_t length, capacity;
};

struct stream {
  int fd;
  unsigned char phase, chunk_state, open, comment_line;
  unsigned char event_kind;  // 0 none/message, 1 reset, 2 delta, 3 other
  size_t chunk_left;
  size_t event_bytes;
  struct buffer line;  // the SSE line being read
  struct buffer data;  // the event's data (kept only with -k or -v)
  struct buffer head;  // the response head, until it ends
  char event_name[16];
  char id[40];   // the current event's id
  char last[40]; // the id of the last event received
  unsigned heartbeats;
};

static struct stream *streams;
static char **paths;
static size_t count;
static FILE *records;
static int epfd, keys, video_ids, dump_data;
static int sources = 16, first_source = 1, inflight_max = 256;
static int port;
static size_t next_to_open, setting_up, opened, refused, closed_by_server, ready_said;
static unsigned long long resets, deltas, others, heartbeats, event_bytes_total, wire_bytes;

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void append(struct buffer *b, const char *bytes, size_t n) {
  if (b->length + n + 1 > b->capacity) {
    size_t capacity = b->capacity ? b->capacity : 256;
    while (capacity < b->length + n + 1) capacity *= 2;
    b->bytes = realloc(b->bytes, capacity);
    if (!b->bytes) { perror("realloc"); exit(1); }
    b->capacity = capacity;
  }
  memcpy(b->bytes + b->length, bytes, n);
  b->length += n;
  b->bytes[b->length] = 0;
}

static void release(struct buffer *b) {
  free(b->bytes);
  b->bytes = NULL;
  b->length = b->capacity = 0;
}

static void say_ready(void) {
  if (ready_said || opened + refused + closed_by_server < count) return;
  ready_said = 1;
  printf("READY opened=%zu refused=%zu closed=%zu\n", opened, refused, closed_by_server);
  fflush(stdout);
}

static void finish(size_t index, uint64_t t, const char *why, int status) {
  struct stream *s = &streams[index];
  if (s->phase == DONE) return;
  if (s->phase == CONNECTING || s->phase == HEAD || (s->phase == BODY && !s->open)) setting_up--;
  if (s->fd >= 0) {
    epoll_ctl(epfd, EPOLL_CTL_DEL, s->fd, NULL);
    close(s->fd);
  }
  s->fd = -1;
  if (why[0] == 'F') {
    refused++;
    fprintf(records, "F %zu %llu %d\n", index, (unsigned long long)t, status);
  } else {
    closed_by_server++;
    fprintf(records, "C %zu %llu\n", index, (unsigned long long)t);
  }
  s->phase = DONE;
  release(&s->line);
  release(&s->data);
  release(&s->head);
}

static void open_more(void);

static void start(size_t index) {
  struct stream *s = &streams[index];
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) { perror("socket"); exit(1); }
  int one = 1;
  setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in source = {.sin_family = AF_INET};
  source.sin_addr.s_addr = htonl((127u << 24) | (1u << 8) | (unsigned)(first_source + (int)(index % (size_t)sources)));
  if (bind(fd, (struct sockaddr *)&source, sizeof source) < 0) { perror("bind"); exit(1); }
  struct sockaddr_in server = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  s->fd = fd;
  s->phase = CONNECTING;
  setting_up++;
  struct epoll_event e = {.events = EPOLLOUT, .data.u64 = index + 1};
  epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &e);
  if (connect(fd, (struct sockaddr *)&server, sizeof server) < 0 && errno != EINPROGRESS) {
    finish(index, now_ns(), "F", 0);
  }
}

static void open_more(void) {
  while (next_to_open < count && setting_up < (size_t)inflight_max) start(next_to_open++);
}

static void send_request(size_t index) {
  struct stream *s = &streams[index];
  int error = 0;
  socklen_t length = sizeof error;
  getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &error, &length);
  if (error) { finish(index, now_ns(), "F", 0); return; }
  char request[1024];
  int n = snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n", paths[index]);
  if (write(s->fd, request, (size_t)n) != n) { finish(index, now_ns(), "F", 0); return; }
  s->phase = HEAD;
  struct epoll_event e = {.events = EPOLLIN, .data.u64 = index + 1};
  epoll_ctl(epfd, EPOLL_CTL_MOD, s->fd, &e);
}

// Writes the keys of an event's data: like counts (with the video when the whole video is
// there: `"id":V,"like_count":N`) and bench titles ("lv-N").
static void write_keys(const struct buffer *data, int likes, int titles, int ids_only) {
  if (!data->bytes) return;
  const char *p = data->bytes, *end = data->bytes + data->length;
  static const char like[] = "\"like_count\":";
  while (likes && (p = memmem(p, (size_t)(end - p), like, sizeof like - 1))) {
    const char *q = p + sizeof like - 1;
    long long n = strtoll(q, NULL, 10);
    long long video = 0;
    // Back up over `"id":V,` right before it.
    const char *c = p - 1;
    if (c > data->bytes && *c == ',') {
      const char *digits = c;
      while (digits > data->bytes && digits[-1] >= '0' && digits[-1] <= '9') digits--;
      if (digits - 5 >= data->bytes && memcmp(digits - 5, "\"id\":", 5) == 0) video = strtoll(digits, NULL, 10);
    }
    if (ids_only) {
      if (video) fprintf(records, " %lld", video);
    } else {
      fprintf(records, " L:%lld:%lld", video, n);
    }
    p = q;
  }
  static const char title[] = "\"title\":\"lv-";
  p = data->bytes;
  while (titles && (p = memmem(p, (size_t)(end - p), title, sizeof title - 1))) {
    p += sizeof title - 1;
    fprintf(records, " T:%lld", strtoll(p, NULL, 10));
  }
}

static void dispatch(size_t index, uint64_t t) {
  struct stream *s = &streams[index];
  if (s->event_kind == 0 && s->data.length == 0 && s->id[0] == 0) {  // nothing but `retry:`
    s->event_bytes = 0;
    return;
  }
  if (s->id[0]) memcpy(s->last, s->id, sizeof s->last);
  event_bytes_total += s->event_bytes;
  if (s->event_kind == 1) {
    resets++;
    fprintf(records, "R %zu %llu %zu %s", index, (unsigned long long)t, s->event_bytes, s->id);
    if (video_ids) write_keys(&s->data, 1, 0, 1);
    fputc('\n', records);
    if (dump_data) fprintf(records, "J %s\n", s->data.bytes ? s->data.bytes : "");
  } else if (s->event_kind == 2) {
    deltas++;
    fprintf(records, "D %zu %llu %zu %s", index, (unsigned long long)t, s->event_bytes, s->id);
    if (keys) write_keys(&s->data, 1, 1, 0);
    fputc('\n', records);
    if (dump_data) fprintf(records, "J %s\n", s->data.bytes ? s->data.bytes : "");
  } else {
    others++;
    fprintf(records, "X %zu %llu %s\n", index, (unsigned long long)t, s->event_name[0] ? s->event_name : "message");
  }
  s->event_kind = 0;
  s->event_name[0] = 0;
  s->id[0] = 0;
  s->event_bytes = 0;
  s->data.length = 0;
  if (s->data.capacity > 65536) release(&s->data);
}

// One line of the event stream, without its end.
static void sse_line(size_t index, const char *line, size_t n, uint64_t t) {
  struct stream *s = &streams[index];
  if (n == 0) {
    if (s->comment_line) {
      s->comment_line = 0;
      return;
    }
    s->event_bytes += 1;  // the blank line that ends the event
    dispatch(index, t);
    return;
  }
  if (line[0] == ':') {
    // ":" alone then a blank line is the heartbeat; other comment lines are skipped.
    if (n == 1) {
      s->heartbeats++;
      heartbeats++;
      s->comment_line = 1;
    }
    return;
  }
  s->comment_line = 0;
  s->event_bytes += n + 1;
  if (n >= 7 && memcmp(line, "retry: ", 7) == 0) {
    s->event_bytes = 0;
    if (!s->open) {
      s->open = 1;
      opened++;
      setting_up--;
      open_more();
      say_ready();
    }
    return;
  }
  if (n >= 7 && memcmp(line, "event: ", 7) == 0) {
    size_t k = n - 7 < sizeof s->event_name - 1 ? n - 7 : sizeof s->event_name - 1;
    memcpy(s->event_name, line + 7, k);
    s->event_name[k] = 0;
    s->event_kind = strcmp(s->event_name, "reset") == 0 ? 1 : strcmp(s->event_name, "delta") == 0 ? 2 : 3;
  } else if (n >= 4 && memcmp(line, "id: ", 4) == 0) {
    size_t k = n - 4 < sizeof s->id - 1 ? n - 4 : sizeof s->id - 1;
    memcpy(s->id, line + 4, k);
    s->id[k] = 0;
  } else if (n >= 6 && memcmp(line, "data: ", 6) == 0) {
    if (keys || video_ids || dump_data) append(&s->data, line + 6, n - 6);
  }
}

// Body bytes after the chunked framing is taken off.
static void body_bytes(size_t index, const char *p, size_t n, uint64_t t) {
  struct stream *s = &streams[index];
  while (n > 0) {
    const char *newline = memchr(p, '\n', n);
    if (!newline) {
      append(&s->line, p, n);
      return;
    }
    size_t k = (size_t)(newline - p);
    if (s->line.length) {
      append(&s->line, p, k);
      sse_line(index, s->line.bytes, s->line.length, t);
      s->line.length = 0;
      if (s->line.capacity > 65536) release(&s->line);
    } else {
      sse_line(index, p, k, t);
    }
    p = newline + 1;
    n -= k + 1;
  }
}

static void chunked(size_t index, const char *p, size_t n, uint64_t t) {
  struct stream *s = &streams[index];
  while (n > 0 && s->phase == BODY) {
    switch (s->chunk_state) {
      case SIZE: {
        char c = *p++;
        n--;
        if (c >= '0' && c <= '9') s->chunk_left = s->chunk_left * 16 + (size_t)(c - '0');
        else if (c >= 'a' && c <= 'f') s->chunk_left = s->chunk_left * 16 + (size_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') s->chunk_left = s->chunk_left * 16 + (size_t)(c - 'A' + 10);
        else if (c == '\n') s->chunk_state = s->chunk_left ? DATA : TRAILER;
        else s->chunk_state = SIZE_EXT;
        break;
      }
      case SIZE_EXT:
        if (*p == '\n') s->chunk_state = s->chunk_left ? DATA : TRAILER;
        p++;
        n--;
        break;
      case DATA: {
        size_t k = n < s->chunk_left ? n : s->chunk_left;
        body_bytes(index, p, k, t);
        p += k;
        n -= k;
        s->chunk_left -= k;
        if (s->chunk_left == 0) s->chunk_state = DATA_CR;
        break;
      }
      case DATA_CR:
      case DATA_LF:
        if (*p == '\n') {
          s->chunk_state = SIZE;
          s->chunk_left = 0;
        }
        p++;
        n--;
        break;
      case TRAILER:  // the last chunk: the stream ended
        return;
    }
  }
}

static void readable(size_t index) {
  static char buffer[1 << 18];
  struct stream *s = &streams[index];
  for (;;) {
    ssize_t n = read(s->fd, buffer, sizeof buffer);
    uint64_t t = now_ns();
    if (n == 0) {
      finish(index, t, s->phase == HEAD || !s->open ? "F" : "C", 0);
      say_ready();
      open_more();
      return;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      finish(index, t, s->phase == HEAD || !s->open ? "F" : "C", 0);
      say_ready();
      open_more();
      return;
    }
    wire_bytes += (unsigned long long)n;
    const char *p = buffer;
    size_t left = (size_t)n;
    if (s->phase == HEAD) {
      size_t before = s->head.length;
      append(&s->head, p, left);
      char *end = strstr(s->head.bytes, "\r\n\r\n");
      if (!end) {
        if (s->head.length > 16384) { finish(index, t, "F", 0); say_ready(); open_more(); }
        continue;
      }
      size_t head_length = (size_t)(end - s->head.bytes) + 4;
      int status = 0;
      sscanf(s->head.bytes, "HTTP/1.%*d %d", &status);
      if (status != 200 || !strcasestr(s->head.bytes, "transfer-encoding: chunked")) {
        finish(index, t, "F", status);
        say_ready();
        open_more();
        return;
      }
      p += head_length - before;
      left -= head_length - before;
      release(&s->head);
      s->phase = BODY;
      s->chunk_state = SIZE;
      s->chunk_left = 0;
    }
    chunked(index, p, left, t);
    if ((size_t)n < sizeof buffer) return;
  }
}

static void print_stats(void) {
  size_t with_heartbeat = 0, live = 0;
  for (size_t i = 0; i < count; i++) {
    if (streams[i].heartbeats) with_heartbeat++;
    if (streams[i].phase == BODY && streams[i].open) live++;
  }
  printf("STATS t_ns=%llu opened=%zu live=%zu refused=%zu closed=%zu resets=%llu deltas=%llu others=%llu heartbeats=%llu "
         "streams_with_heartbeat=%zu event_bytes=%llu wire_bytes=%llu\n",
         (unsigned long long)now_ns(), opened, live, refused, closed_by_server, resets, deltas, others, heartbeats, with_heartbeat,
         event_bytes_total, wire_bytes);
  fflush(stdout);
}

static int command(void) {
  static struct buffer input;
  char chunk[4096];
  ssize_t n = read(0, chunk, sizeof chunk);
  if (n <= 0) return 0;
  append(&input, chunk, (size_t)n);
  char *newline;
  while (input.bytes && (newline = memchr(input.bytes, '\n', input.length))) {
    *newline = 0;
    if (strcmp(input.bytes, "stats") == 0) print_stats();
    else if (strcmp(input.bytes, "flush") == 0) {
      fflush(records);
      printf("FLUSHED\n");
      fflush(stdout);
    } else if (strcmp(input.bytes, "dump") == 0) {
      for (size_t i = 0; i < count; i++) fprintf(records, "I %zu %s\n", i, streams[i].last[0] ? streams[i].last : "-");
      fflush(records);
      printf("DUMPED\n");
      fflush(stdout);
    } else if (strcmp(input.bytes, "quit") == 0) return 0;
    size_t used = (size_t)(newline - input.bytes) + 1;
    memmove(input.bytes, input.bytes + used, input.length - used);
    input.length -= used;
  }
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s PORT PATHS RECORDS [-s SOURCES] [-f FIRST_SOURCE] [-i INFLIGHT] [-k] [-v] [-d]\n", argv[0]);
    return 2;
  }
  port = atoi(argv[1]);
  for (int i = 4; i < argc; i++) {
    if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) sources = atoi(argv[++i]);
    else if (strcmp(argv[i], "-f") == 0 && i + 1 < argc) first_source = atoi(argv[++i]);
    else if (strcmp(argv[i], "-i") == 0 && i + 1 < argc) inflight_max = atoi(argv[++i]);
    else if (strcmp(argv[i], "-k") == 0) keys = 1;
    else if (strcmp(argv[i], "-v") == 0) video_ids = 1;
    else if (strcmp(argv[i], "-d") == 0) dump_data = 1;
    else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
  }
  struct rlimit limit;
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);

  FILE *list = fopen(argv[2], "r");
  if (!list) { perror(argv[2]); return 1; }
  size_t capacity = 1024;
  paths = malloc(capacity * sizeof *paths);
  char line[1024];
  while (fgets(line, sizeof line, list)) {
    line[strcspn(line, "\r\n")] = 0;
    if (!line[0]) continue;
    if (count == capacity) paths = realloc(paths, (capacity *= 2) * sizeof *paths);
    paths[count++] = strdup(line);
  }
  fclose(list);
  if (count + 16 > limit.rlim_cur) {
    fprintf(stderr, "%zu streams need more descriptors than RLIMIT_NOFILE allows (%llu)\n", count, (unsigned long long)limit.rlim_cur);
    return 1;
  }
  records = fopen(argv[3], "w");
  if (!records) { perror(argv[3]); return 1; }
  setvbuf(records, NULL, _IOFBF, 1 << 20);
  streams = calloc(count, sizeof *streams);
  for (size_t i = 0; i < count; i++) streams[i].fd = -1;

  epfd = epoll_create1(EPOLL_CLOEXEC);
  fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
  struct epoll_event in = {.events = EPOLLIN, .data.u64 = 0};
  epoll_ctl(epfd, EPOLL_CTL_ADD, 0, &in);
  open_more();
  say_ready();
  struct epoll_event events[1024];
  for (;;) {
    int n = epoll_wait(epfd, events, 1024, 1000);
    if (n < 0 && errno != EINTR) { perror("epoll_wait"); return 1; }
    for (int i = 0; i < n; i++) {
      uint64_t key = events[i].data.u64;
      if (key == 0) {
        if (!command()) goto done;
        continue;
      }
      size_t index = key - 1;
      struct stream *s = &streams[index];
      if (s->phase == CONNECTING) {
        send_request(index);
        if (s->phase == DONE) { say_ready(); open_more(); }
      } else if (s->phase == HEAD || s->phase == BODY) {
        readable(index);
      }
    }
  }
done:
  for (size_t i = 0; i < count; i++)
    if (streams[i].fd >= 0) close(streams[i].fd);
  fflush(records);
  fclose(records);
  return 0;
}

/*
 * tether-stage in C: the GitLab driver's stage process (run_exec), the
 * same program as cmd/tether-stage (the Go build, the reference), built
 * when a C compiler is found because a static C program starts in a
 * fraction of a Go program's time. See doc.go in the directory above and
 * docs/gitlab.md.
 *
 * C11 and POSIX only, no heap on the stage's path: its buffers are static
 * (the kernel maps their pages only when touched).
 */
#ifndef TETHER_STAGE_H
#define TETHER_STAGE_H

#define _XOPEN_SOURCE 700

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Frame types and the payload limit: integration/gitlab/stage/wire.go. */
enum {
	FRAME_REQUEST = 'r',
	FRAME_CANCEL = 'c',
	FRAME_DECLINE = 'd',
	FRAME_STARTED = 's',
	FRAME_STDOUT = 'o',
	FRAME_STDERR = 'e',
	FRAME_EXIT = 'x',
	MAX_FRAME = 1 << 20,
};

/* A string that need not be NUL-terminated (a frame's payload). */
struct bytes {
	const char *p;
	size_t n;
};

/* env.c: the process's environment as Go's os.Environ gives it (empty
 * entries dropped, a key's later duplicates dropped), and lookups. */
struct env {
	char **v; /* entries, then room for three more and a NULL */
	size_t n;
};
bool env_load(struct env *e, char **environ);
const char *env_get(const struct env *e, const char *key);
bool parse_int(const char *s, size_t n, int64_t *out);
size_t fmt_int(char *dst, int64_t v);
size_t concat(char *dst, const char *a, const char *b, const char *c);

/* path.c: Go's filepath.Clean and the job's agent socket (dir.go). */
size_t path_clean(char *dst, const char *src, size_t n);
bool agent_socket(const struct env *e, char *path, size_t cap);
bool working_dir(const struct env *e, char *dir, size_t cap);

/* wire.c: the agent's frames (wire.go). */
size_t request_size(char **args, size_t nargs, const struct env *e, const char *dir);
void request_encode(unsigned char *b, char **args, size_t nargs, const struct env *e, const char *dir);
bool started_decode(struct bytes p, struct bytes *job, int64_t *from);

/* io.c: whole writes and the relay's socket, with the runner's signals. */
void signals_listen(int sock);
void signals_handle(void);
const char *signals_cancelled(void);
size_t write_all(int fd, const void *p, size_t n);
bool send_frame(int fd, int typ, const void *p, size_t n);
bool read_frame(int fd, int *typ, struct bytes *payload);

/* fallback.c: `tether gitlab run` in the process's place. */
int fallback(char **args, size_t nargs, struct env *e, const struct bytes *job, int64_t from, int64_t written);

#endif

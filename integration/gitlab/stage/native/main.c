/* tether-stage [--config FILE] SCRIPT STAGE: the GitLab driver's stage
 * process (run_exec), cmd/tether-stage and process.go's Process.Run in C.
 * `tether-stage --version` prints the build's version (TETHER_VERSION). */
#include "stage.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef TETHER_VERSION
#define TETHER_VERSION "dev"
#endif

extern char **environ;

/* The request frame: the header and the Request's encoding. */
static unsigned char request[5 + MAX_FRAME];
static char cwd[4096];
static char sock_path[4096 + 256];
static char job_id[MAX_FRAME];

/* std_fds opens /dev/null for a closed fd 0, 1 or 2, as the Go runtime
 * does: the socket must never become the stage's stdout. */
static void std_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF)
			open("/dev/null", O_RDWR);
}

/* dial connects to the unix socket at path, waiting at most 2 s while
 * the listener's queue is full; -1 when it cannot. */
static int dial(const char *path)
{
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	size_t n = strlen(path);
	if (n > sizeof sa.sun_path || (n == sizeof sa.sun_path && path[0] != '@'))
		return -1;
	memcpy(sa.sun_path, path, n);
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	if (path[0] == '@') {
		/* an abstract address, as Go's syscall names one */
		sa.sun_path[0] = '\0';
		len--;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	struct timeval tv = {.tv_sec = 2};
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 || connect(fd, (struct sockaddr *)&sa, len) != 0) {
		close(fd);
		return -1;
	}
	tv.tv_sec = 0;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* send_request sends the stage's Request; false when it cannot (the
 * agent is gone, or the request is over MAX_FRAME). */
static bool send_request(int fd, char **args, size_t nargs, const struct env *e)
{
	size_t n = request_size(args, nargs, e, cwd);
	if (n > MAX_FRAME)
		return false;
	request[0] = FRAME_REQUEST;
	request[1] = (unsigned char)(n >> 24);
	request[2] = (unsigned char)(n >> 16);
	request[3] = (unsigned char)(n >> 8);
	request[4] = (unsigned char)n;
	request_encode(request + 5, args, nargs, e, cwd);
	/* signals are not handled yet: this write is not interrupted */
	size_t done = 0;
	while (done < 5 + n) {
		ssize_t w = send(fd, request + done, 5 + n - done, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return false;
		done += (size_t)w;
	}
	return true;
}

/* relay relays the agent's frames until its exit frame, whose code it
 * returns, or falls back when the agent declines the stage or is gone. */
static int relay(int fd, char **args, size_t nargs, struct env *e)
{
	struct bytes started = {NULL, 0};
	bool have_started = false;
	int64_t from = 0, written = 0;
	for (;;) {
		int typ;
		struct bytes p;
		if (!read_frame(fd, &typ, &p))
			return fallback(args, nargs, e, have_started ? &started : NULL, from, written);
		switch (typ) {
		case FRAME_STDOUT:
			written += (int64_t)write_all(1, p.p, p.n);
			break;
		case FRAME_STDERR:
			write_all(2, p.p, p.n);
			break;
		case FRAME_STARTED: {
			struct bytes job;
			int64_t f;
			if (started_decode(p, &job, &f) && job.n > 0) {
				memcpy(job_id, job.p, job.n);
				started = (struct bytes){job_id, job.n};
				from = f;
				have_started = true;
			}
			break;
		}
		case FRAME_DECLINE:
			if (!have_started && written == 0)
				return fallback(args, nargs, e, NULL, 0, 0);
			break;
		case FRAME_EXIT: {
			int64_t code;
			if (!parse_int(p.p, p.n, &code))
				return fallback(args, nargs, e, have_started ? &started : NULL, from, written);
			return (int)(code & 0xff);
		}
		}
	}
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		static const char v[] = "tether-stage " TETHER_VERSION "\n";
		write_all(1, v, sizeof v - 1);
		return 0;
	}
	std_fds();
	struct env e;
	if (!env_load(&e, environ)) {
		write_all(2, "tether-stage: cannot allocate memory\n", 37);
		return 1;
	}
	working_dir(&e, cwd, sizeof cwd);
	char **args = argv + 1;
	size_t nargs = argc > 0 ? (size_t)argc - 1 : 0;
	if (!agent_socket(&e, sock_path, sizeof sock_path))
		return fallback(args, nargs, &e, NULL, 0, 0);
	int fd = dial(sock_path);
	if (fd < 0)
		return fallback(args, nargs, &e, NULL, 0, 0);
	if (!send_request(fd, args, nargs, &e)) {
		close(fd);
		return fallback(args, nargs, &e, NULL, 0, 0);
	}
	signals_listen(fd);
	return relay(fd, args, nargs, &e);
}

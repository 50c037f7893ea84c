/* Whole writes, the agent's frames and the runner's signals (process.go's
 * signalState): once the agent has the stage, the first SIGINT or SIGTERM
 * sends it a cancel frame, a second shuts the socket and exits 128+N. A
 * handler records the signal and wakes the relay through a pipe; blocking
 * calls are interrupted (no SA_RESTART) and handle it. */
#include "stage.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t first_sig, second_sig;
static int wake[2] = {-1, -1};
static int agent = -1;
static const char *cancelled;
/* in_stderr is set while a write to stderr is under way: a signal's line
 * waits for its end rather than cut into the stage's bytes. */
static bool in_stderr;

static void on_signal(int sig)
{
	int saved = errno;
	if (!first_sig)
		first_sig = sig;
	else if (!second_sig)
		second_sig = sig;
	if (wake[1] >= 0)
		(void)!write(wake[1], "", 1);
	errno = saved;
}

static const char *signal_name(int sig)
{
	return sig == SIGINT ? "SIGINT" : "SIGTERM";
}

/* signals_listen starts handling SIGINT and SIGTERM for the stage the
 * agent has on sock. Before, either ends the process (the agent cancels
 * the stage of a process gone). */
void signals_listen(int sock)
{
	agent = sock;
	if (pipe(wake) == 0) {
		for (int i = 0; i < 2; i++) {
			fcntl(wake[i], F_SETFD, FD_CLOEXEC);
			fcntl(wake[i], F_SETFL, O_NONBLOCK);
		}
	} else {
		wake[0] = wake[1] = -1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* signals_cancelled is the first signal's name, NULL before one came. */
const char *signals_cancelled(void)
{
	return cancelled;
}

/* signals_handle acts on the signals received since it last ran: the
 * first cancels the stage over the socket, the second ends the process. */
void signals_handle(void)
{
	if (agent < 0 || in_stderr)
		return;
	if (first_sig && !cancelled) {
		cancelled = signal_name(first_sig);
		char msg[96];
		size_t n = concat(msg, "tether: ", cancelled, ": cancelling the job (signal again to exit at once)\n");
		write_all(2, msg, n);
		send_frame(agent, FRAME_CANCEL, cancelled, strlen(cancelled));
	}
	if (second_sig) {
		int sig = second_sig;
		char msg[64];
		size_t n = concat(msg, "tether: ", signal_name(sig), " again: exiting now\n");
		second_sig = 0; /* said once, even if the write is interrupted */
		write_all(2, msg, n);
		shutdown(agent, SHUT_RDWR);
		_exit(128 + sig);
	}
}

/* wait_for polls fd for events, handling the signals that come first;
 * false on an error of poll's. */
static bool wait_for(int fd, short events)
{
	struct pollfd p[2] = {{.fd = fd, .events = events}, {.fd = wake[0], .events = POLLIN}};
	for (;;) {
		signals_handle();
		int r = poll(p, wake[0] >= 0 ? 2 : 1, -1);
		if (r < 0 && errno != EINTR)
			return false;
		if (r > 0 && wake[0] >= 0 && p[1].revents) {
			char drain[16];
			while (read(wake[0], drain, sizeof drain) > 0)
				;
		}
		if (r > 0 && p[0].revents)
			return true;
	}
}

/* put writes p[:n] to fd (a socket when sock), all of it unless an error
 * stops it, and returns how much it wrote. */
static size_t put(int fd, const void *p, size_t n, bool sock)
{
	const char *b = p;
	size_t done = 0;
	bool was = in_stderr;
	in_stderr = in_stderr || fd == 2;
	while (done < n) {
		ssize_t w = sock ? send(fd, b + done, n - done, MSG_NOSIGNAL) : write(fd, b + done, n - done);
		if (w >= 0) {
			done += (size_t)w;
		} else if (errno == EINTR) {
			signals_handle();
		} else if (errno != EAGAIN && errno != EWOULDBLOCK) {
			break;
		} else if (!wait_for(fd, POLLOUT)) {
			break;
		}
	}
	in_stderr = was;
	return done;
}

/* write_all writes p[:n] to fd and returns how much it wrote. */
size_t write_all(int fd, const void *p, size_t n)
{
	return put(fd, p, n, false);
}

/* send_frame writes one frame to the socket fd in one write. */
bool send_frame(int fd, int typ, const void *p, size_t n)
{
	unsigned char head[5] = {(unsigned char)typ, (unsigned char)(n >> 24), (unsigned char)(n >> 16), (unsigned char)(n >> 8), (unsigned char)n};
	if (n > 64) {
		/* a frame the stage process sends is small (its request is
		 * sent by send_request) */
		return put(fd, head, 5, true) == 5 && put(fd, p, n, true) == n;
	}
	unsigned char buf[5 + 64];
	memcpy(buf, head, 5);
	memcpy(buf + 5, p, n);
	return put(fd, buf, 5 + n, true) == 5 + n;
}

/* The frames read from the agent, ahead of the relay. */
static unsigned char rbuf[5 + MAX_FRAME + 65536];
static size_t rstart, rend;

/* fill reads until rbuf holds n bytes from rstart; false at the end of
 * the stream or on an error. */
static bool fill(int fd, size_t n)
{
	while (rend - rstart < n) {
		if (rstart + n > sizeof rbuf) {
			memmove(rbuf, rbuf + rstart, rend - rstart);
			rend -= rstart;
			rstart = 0;
		}
		if (agent >= 0 && !wait_for(fd, POLLIN))
			return false;
		ssize_t r = read(fd, rbuf + rend, sizeof rbuf - rend);
		if (r > 0) {
			rend += (size_t)r;
		} else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
			return false;
		}
	}
	return true;
}

/* read_frame reads the agent's next frame; its payload stays valid until
 * the next call. False at the end of the stream, on an error, or for a
 * frame over MAX_FRAME: the agent is gone. */
bool read_frame(int fd, int *typ, struct bytes *payload)
{
	signals_handle(); /* what came while the last frame was written */
	if (!fill(fd, 5))
		return false;
	const unsigned char *h = rbuf + rstart;
	uint32_t n = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
	if (n > MAX_FRAME || !fill(fd, 5 + (size_t)n))
		return false;
	*typ = rbuf[rstart];
	payload->p = (const char *)rbuf + rstart + 5;
	payload->n = n;
	rstart += 5 + (size_t)n;
	if (rstart == rend)
		rstart = rend = 0;
	return true;
}

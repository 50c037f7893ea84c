/* The fallback (process.go's fallback and ExecTether): the process
 * becomes `tether gitlab run` with its arguments, the tether beside it
 * (internal/sibling) else on PATH (os/exec's LookPath), and says why when
 * it cannot. */
#include "stage.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

static const char not_found[] = "exec: \"tether\": executable file not found in $PATH";
static const char dot[] = "exec: \"tether\": cannot run executable found relative to current directory";

/* join writes filepath.Join(dir[:n], "tether") to dst (PATH_MAX + 16
 * bytes); false when it does not fit. */
static bool join_tether(char *dst, const char *dir, size_t n)
{
	char tmp[PATH_MAX + 16];
	if (n + sizeof "/tether" > sizeof tmp)
		return false;
	memcpy(tmp, dir, n);
	memcpy(tmp + n, "/tether", sizeof "/tether");
	path_clean(dst, tmp, n + sizeof "/tether" - 1);
	return true;
}

/* dir_len is the length of filepath.Dir(path)'s part before the last
 * element ("/" for a file at the root). */
static size_t dir_len(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return 0;
	return slash == path ? 1 : (size_t)(slash - path);
}

/* beside finds an executable regular file tether in dir[:n]. */
static bool beside(char *out, const char *dir, size_t n)
{
	struct stat st;
	return join_tether(out, dir, n) && stat(out, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
}

/* executable is os/exec's findExecutable. */
static bool executable(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0 || S_ISDIR(st.st_mode))
		return false;
	if (faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) == 0)
		return true;
	return (errno == ENOSYS || errno == EPERM) && (st.st_mode & 0111);
}

/* find_tether writes the tether to run to out, or sets *why. */
static bool find_tether(const struct env *e, char *out, const char **why)
{
	char self[PATH_MAX + 1];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = '\0';
		size_t len = (size_t)n;
		static const char deleted[] = " (deleted)";
		if (len >= sizeof deleted - 1 && strcmp(self + len - (sizeof deleted - 1), deleted) == 0)
			self[len -= sizeof deleted - 1] = '\0';
		size_t d = dir_len(self);
		if (beside(out, self, d))
			return true;
		char real[PATH_MAX + 1];
		if (realpath(self, real)) {
			size_t rd = dir_len(real);
			if ((rd != d || memcmp(real, self, d) != 0) && beside(out, real, rd))
				return true;
		}
	}
	/* os/exec's LookPath: PATH's elements, "" meaning "." */
	const char *p = env_get(e, "PATH");
	while (*p) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if ((len ? join_tether(out, p, len) : join_tether(out, ".", 1)) && executable(out)) {
			if (out[0] == '/')
				return true;
			*why = dot;
			return false;
		}
		if (!end)
			break;
		p = end + 1;
		if (!*p)
			p = "."; /* a trailing ':' is an element too */
	}
	*why = not_found;
	return false;
}

/* errno_text is Go's text of a system error: strerror's, lowercase. */
static void errno_text(char *dst, size_t cap, int err)
{
	const char *s = strerror(err);
	size_t n = strlen(s);
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
	if (dst[0] >= 'A' && dst[0] <= 'Z')
		dst[0] = (char)(dst[0] - 'A' + 'a');
}

static char resume[32 + MAX_FRAME + 48];

/* fallback runs the stage with `tether gitlab run`: from its start when
 * the agent never began it (job NULL), else resuming the agent's job
 * after written bytes of stdout. It returns only when it cannot: the exit
 * code of a system failure. */
int fallback(char **args, size_t nargs, struct env *e, const struct bytes *job, int64_t from, int64_t written)
{
	char *v[4];
	size_t nv = 0;
	v[nv++] = "TETHER_GITLAB_FALLBACK=1";
	bool nul = false;
	if (job) {
		size_t w = concat(resume, "TETHER_GITLAB_RESUME=", "", "");
		memcpy(resume + w, job->p, job->n);
		w += job->n;
		resume[w++] = ' ';
		w += fmt_int(resume + w, from);
		resume[w++] = ' ';
		w += fmt_int(resume + w, written);
		nul = memchr(job->p, '\0', job->n) != NULL;
		v[nv++] = resume;
	}
	static char cancelled[48];
	if (signals_cancelled()) {
		concat(cancelled, "TETHER_GITLAB_CANCELLED=", signals_cancelled(), "");
		v[nv++] = cancelled;
	}
	for (size_t i = 0; i < nv; i++)
		e->v[e->n + i] = v[i];
	e->v[e->n + nv] = NULL;

	char bin[PATH_MAX + 16];
	const char *why = NULL;
	char err[256];
	if (!find_tether(e, bin, &why)) {
		concat(err, "no tether binary beside tether-stage nor on PATH: install both side by side (", why, ")");
	} else if (nul) {
		errno_text(err, sizeof err, EINVAL);
	} else {
		char **argv = malloc((nargs + 4) * sizeof *argv);
		if (!argv) {
			errno_text(err, sizeof err, ENOMEM);
			goto fail;
		}
		argv[0] = bin;
		argv[1] = "gitlab";
		argv[2] = "run";
		memcpy(argv + 3, args, nargs * sizeof *argv);
		argv[3 + nargs] = NULL;
		execve(bin, argv, e->v);
		errno_text(err, sizeof err, errno);
		free(argv);
	}
fail:;
	char msg[512];
	size_t n = concat(msg, "ERROR: tether: the stage could not run `tether gitlab run`: ", err, "\n");
	write_all(2, msg, n);
	const char *code = env_get(e, "SYSTEM_FAILURE_EXIT_CODE");
	int64_t c;
	return parse_int(code, strlen(code), &c) ? (int)(c & 0xff) : 1;
}

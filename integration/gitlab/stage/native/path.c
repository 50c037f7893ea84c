/* Where the job's agent listens (dir.go's Dir, SocketName, CheckDir) and
 * the working directory as Go's os.Getwd finds it. */
#include "stage.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* path_clean writes Go's filepath.Clean of src[:n] to dst (room for n+2
 * bytes) and returns its length. */
size_t path_clean(char *dst, const char *src, size_t n)
{
	if (n == 0) {
		memcpy(dst, ".", 2);
		return 1;
	}
	bool rooted = src[0] == '/';
	size_t r = 0, w = 0, dotdot = 0;
	if (rooted) {
		dst[w++] = '/';
		r = dotdot = 1;
	}
	while (r < n) {
		if (src[r] == '/') {
			r++;
		} else if (src[r] == '.' && (r + 1 == n || src[r + 1] == '/')) {
			r++;
		} else if (src[r] == '.' && src[r + 1] == '.' && (r + 2 == n || src[r + 2] == '/')) {
			r += 2;
			if (w > dotdot) {
				w--;
				while (w > dotdot && dst[w] != '/')
					w--;
			} else if (!rooted) {
				if (w > 0)
					dst[w++] = '/';
				dst[w++] = '.';
				dst[w++] = '.';
				dotdot = w;
			}
		} else {
			if ((rooted && w != 1) || (!rooted && w != 0))
				dst[w++] = '/';
			for (; r < n && src[r] != '/'; r++)
				dst[w++] = src[r];
		}
	}
	if (w == 0)
		dst[w++] = '.';
	dst[w] = '\0';
	return w;
}

/* rune_len is the length of the UTF-8 sequence at s[:n] as Go decodes it:
 * 1 for an invalid byte. */
static size_t rune_len(const unsigned char *s, size_t n)
{
	unsigned char b = s[0];
	size_t want;
	unsigned char lo = 0x80, hi = 0xBF;
	if (b < 0x80)
		return 1;
	if (b >= 0xC2 && b <= 0xDF)
		want = 2;
	else if (b >= 0xE0 && b <= 0xEF)
		want = 3;
	else if (b >= 0xF0 && b <= 0xF4)
		want = 4;
	else
		return 1;
	if (b == 0xE0)
		lo = 0xA0;
	else if (b == 0xED)
		hi = 0x9F;
	else if (b == 0xF0)
		lo = 0x90;
	else if (b == 0xF4)
		hi = 0x8F;
	if (n < want || s[1] < lo || s[1] > hi)
		return 1;
	for (size_t i = 2; i < want; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 1;
	return want;
}

/* append_id appends dir.go's clean(s): letters, digits, '-' and '_' kept,
 * any other character '_', at most 24 of them. */
static size_t append_id(char *dst, const char *s)
{
	size_t w = 0, n = strlen(s);
	for (size_t r = 0; r < n && w < 24;) {
		char c = s[r];
		bool keep = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
		dst[w++] = keep ? c : '_';
		r += rune_len((const unsigned char *)s + r, n - r);
	}
	return w;
}

/* private_dir is CheckDir: a directory, not a symbolic link, of this
 * user's, that no one else may enter. */
static bool private_dir(const char *dir)
{
	struct stat st;
	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() && (st.st_mode & 077) == 0;
}

/* agent_socket writes the path of the job's agent's socket to path
 * (cap bytes); false when the runner's environment names no job, the
 * directory is not private or the path does not fit. */
bool agent_socket(const struct env *e, char *path, size_t cap)
{
	const char *job = env_get(e, "CUSTOM_ENV_CI_JOB_ID");
	if (job[0] == '\0')
		return false;
	const char *runner = env_get(e, "CUSTOM_ENV_CI_RUNNER_ID");
	if (runner[0] == '\0')
		runner = "0";
	const char *tmp = env_get(e, "TMPDIR");
	if (tmp[0] == '\0')
		tmp = "/tmp";
	static char joined[8192];
	size_t tl = strlen(tmp);
	/* tmp, '/', the name (at most 14+10+2+24+2+24 bytes), '/agent.sock' */
	if (tl + 128 > sizeof joined || tl + 128 > cap)
		return false;
	memcpy(joined, tmp, tl);
	size_t w = tl;
	memcpy(joined + w, "/tether-gitlab-", 15);
	w += 15;
	w += fmt_int(joined + w, (int64_t)getuid());
	memcpy(joined + w, "-r", 2);
	w += 2;
	w += append_id(joined + w, runner);
	memcpy(joined + w, "-j", 2);
	w += 2;
	w += append_id(joined + w, job);
	size_t n = path_clean(path, joined, w);
	if (!private_dir(path))
		return false;
	memcpy(path + n, "/agent.sock", sizeof "/agent.sock");
	return true;
}

/* working_dir is os.Getwd: $PWD when it is absolute and names ".", else
 * getcwd; false (and "") when neither answers. */
bool working_dir(const struct env *e, char *dir, size_t cap)
{
	const char *pwd = env_get(e, "PWD");
	dir[0] = '\0';
	if (pwd[0] == '/') {
		struct stat dot, st;
		if (stat(".", &dot) != 0)
			return false;
		size_t n = strlen(pwd);
		if (stat(pwd, &st) == 0 && st.st_dev == dot.st_dev && st.st_ino == dot.st_ino && n < cap) {
			memcpy(dir, pwd, n + 1);
			return true;
		}
	}
	if (!getcwd(dir, cap) || dir[0] != '/') {
		dir[0] = '\0';
		return false;
	}
	return true;
}

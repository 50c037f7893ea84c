/* The environment as the Go build sees it (os.Environ after os.Getenv:
 * syscall's copyenv drops a key's later duplicates) and strconv.Atoi. */
#include "stage.h"

#include <stdlib.h>
#include <string.h>

enum { STATIC_ENTRIES = 2048, STATIC_SLOTS = 4096 };

static char *entries[STATIC_ENTRIES + 4];
static uint32_t slots[STATIC_SLOTS];

/* keylen is the length of s's key (before its first '='), or -1 without
 * one: such entries are kept as they are, as Go keeps them. */
static long keylen(const char *s)
{
	const char *eq = strchr(s, '=');
	return eq ? (long)(eq - s) : -1;
}

static uint32_t hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

/* env_load fills e from environ; false when memory runs out. */
bool env_load(struct env *e, char **environ)
{
	size_t total = 0;
	while (environ[total])
		total++;
	char **v = entries;
	uint32_t *tab = slots;
	size_t nslots = STATIC_SLOTS;
	if (total > STATIC_ENTRIES) {
		nslots = 1;
		while (nslots < 2 * total)
			nslots <<= 1;
		v = malloc((total + 4) * sizeof *v);
		tab = calloc(nslots, sizeof *tab);
		if (!v || !tab) {
			free(v);
			free(tab);
			return false;
		}
	}
	size_t n = 0;
	for (size_t i = 0; i < total; i++) {
		char *s = environ[i];
		if (s[0] == '\0')
			continue;
		long k = keylen(s);
		if (k >= 0) {
			size_t at = hash(s, (size_t)k) & (nslots - 1);
			bool dup = false;
			for (; tab[at]; at = (at + 1) & (nslots - 1)) {
				const char *o = v[tab[at] - 1];
				if (keylen(o) == k && memcmp(o, s, (size_t)k) == 0) {
					dup = true;
					break;
				}
			}
			if (dup)
				continue;
			tab[at] = (uint32_t)n + 1;
		}
		v[n++] = s;
	}
	v[n] = NULL;
	if (tab != slots)
		free(tab);
	e->v = v;
	e->n = n;
	return true;
}

/* env_get is key's value, "" when it is not set. */
const char *env_get(const struct env *e, const char *key)
{
	size_t k = strlen(key);
	for (size_t i = e->n; i-- > 0;) {
		const char *s = e->v[i];
		if (strncmp(s, key, k) == 0 && s[k] == '=')
			return s + k + 1;
	}
	return "";
}

/* parse_int is strconv.Atoi of s[:n]: an optional sign, decimal digits,
 * within int64. */
bool parse_int(const char *s, size_t n, int64_t *out)
{
	bool neg = false;
	size_t i = 0;
	if (n > 0 && (s[0] == '+' || s[0] == '-')) {
		neg = s[0] == '-';
		i = 1;
	}
	if (i == n)
		return false;
	uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		uint64_t d = (uint64_t)(s[i] - '0');
		if (v > (limit - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

/* fmt_int writes v in decimal to dst (room for 21 bytes) and returns its
 * length. */
size_t fmt_int(char *dst, int64_t v)
{
	char tmp[24];
	size_t n = 0, w = 0;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		dst[w++] = '-';
	while (n)
		dst[w++] = tmp[--n];
	dst[w] = '\0';
	return w;
}

/* concat writes a, b and c to dst and returns the length. */
size_t concat(char *dst, const char *a, const char *b, const char *c)
{
	size_t w = 0;
	for (const char *s = a; *s; s++)
		dst[w++] = *s;
	for (const char *s = b; *s; s++)
		dst[w++] = *s;
	for (const char *s = c; *s; s++)
		dst[w++] = *s;
	dst[w] = '\0';
	return w;
}

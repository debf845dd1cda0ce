/*
 * keyring.c — loading, changing and saving the gossip keys (see keyring.h).
 *
 * The file is checked before it is read (fstat of the open file, so what is checked is
 * what is read), then parsed line by line with libsodium's base64 decoder; nothing of a
 * key goes into an error message, only the line number or the key's fingerprint.
 *
 * The changes work on the caller's ring and leave it as it was when they fail, so the
 * caller can try a change on a copy. Saving writes a whole new file beside the old one
 * and renames it over it: rename(2) within one directory is atomic, and the fsyncs before
 * and after it make the new file's bytes and its name durable in that order. Buffers that
 * held key text are wiped (sodium_memzero) before they are released.
 */
#include "keyring.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "rd_err.h"

_Static_assert(RD_KEY_BASE64_LEN + 1 ==
                   sodium_base64_ENCODED_LEN(RD_ENVELOPE_KEY_LEN, sodium_base64_VARIANT_ORIGINAL),
               "a key in base64 is 44 characters");

/* Fails the load: no keys, one line in err. */
static int load_fail(struct rd_keyring *kr, FILE *f, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int load_fail(struct rd_keyring *kr, FILE *f, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    if (f) fclose(f);
    sodium_memzero(kr, sizeof *kr);
    return RD_EINVAL;
}

/* True if `text` (blanks already trimmed) is one base64 key; its bytes then go to key. */
static bool decode_key(const char *text, uint8_t key[RD_ENVELOPE_KEY_LEN])
{
    size_t got;
    const char *end;
    return sodium_base642bin(key, RD_ENVELOPE_KEY_LEN, text, strlen(text), NULL, &got, &end,
                             sodium_base64_VARIANT_ORIGINAL) == 0 &&
           !*end && got == RD_ENVELOPE_KEY_LEN;
}

/* One line without its '\n', blanks around it trimmed: a key, or nothing to do. */
static int parse_line(struct rd_keyring *kr, char *line, const char *path, int lineno, FILE *f,
                      char *err, size_t errlen)
{
    size_t n = strlen(line);
    while (n && strchr(" \t\r\n", line[n - 1]))
        line[--n] = '\0';
    line += strspn(line, " \t");
    if (!*line || *line == '#') return 0;
    uint8_t key[RD_ENVELOPE_KEY_LEN];
    if (!decode_key(line, key))
        return load_fail(kr, f, err, errlen, "--keyring-file %s:%d: not a base64 key of %d bytes",
                         path, lineno, RD_ENVELOPE_KEY_LEN);
    for (size_t i = 0; i < kr->nkeys; i++)
        if (sodium_memcmp(kr->keys[i], key, sizeof key) == 0)
            return load_fail(kr, f, err, errlen, "--keyring-file %s:%d: key repeated", path,
                             lineno);
    if (kr->nkeys == RD_KEYRING_MAX)
        return load_fail(kr, f, err, errlen, "--keyring-file %s: more than %d keys", path,
                         RD_KEYRING_MAX);
    memcpy(kr->keys[kr->nkeys++], key, sizeof key);
    sodium_memzero(key, sizeof key);
    return 0;
}

int rd_keyring_load(struct rd_keyring *kr, const char *path, char *err, size_t errlen)
{
    memset(kr, 0, sizeof *kr);
    int fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return load_fail(kr, NULL, err, errlen, "--keyring-file %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return load_fail(kr, NULL, err, errlen, "--keyring-file %s: not a regular file", path);
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        close(fd);
        return load_fail(kr, NULL, err, errlen,
                         "--keyring-file %s: group or others can access it (mode %03o): "
                         "chmod 600 it",
                         path, (unsigned)(st.st_mode & 0777));
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return load_fail(kr, NULL, err, errlen, "--keyring-file %s: %s", path, strerror(errno));
    }
    char line[RD_KEYRING_LINE_MAX + 2];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            sodium_memzero(line, sizeof line);
            return load_fail(kr, f, err, errlen, "--keyring-file %s:%d: line too long", path,
                             lineno);
        }
        if (parse_line(kr, line, path, lineno, f, err, errlen) < 0) {
            sodium_memzero(line, sizeof line);
            return RD_EINVAL;
        }
    }
    sodium_memzero(line, sizeof line);
    if (ferror(f)) return load_fail(kr, f, err, errlen, "--keyring-file %s: read error", path);
    fclose(f);
    if (kr->nkeys == 0) return load_fail(kr, NULL, err, errlen, "--keyring-file %s: no key", path);
    return 0;
}

void rd_keyring_fingerprint(const uint8_t key[RD_ENVELOPE_KEY_LEN],
                            char out[RD_KEY_FINGERPRINT_LEN + 1])
{
    uint8_t h[crypto_generichash_BYTES];
    crypto_generichash(h, sizeof h, key, RD_ENVELOPE_KEY_LEN, NULL, 0);
    sodium_bin2hex(out, RD_KEY_FINGERPRINT_LEN + 1, h, RD_KEY_FINGERPRINT_LEN / 2);
}

void rd_keyring_generate(char out[RD_KEY_BASE64_LEN + 1])
{
    uint8_t key[RD_ENVELOPE_KEY_LEN];
    randombytes_buf(key, sizeof key);
    sodium_bin2base64(out, RD_KEY_BASE64_LEN + 1, key, sizeof key, sodium_base64_VARIANT_ORIGINAL);
    sodium_memzero(key, sizeof key);
}

int rd_keyring_parse_key(const char *text, uint8_t key[RD_ENVELOPE_KEY_LEN], char *err,
                         size_t errlen)
{
    char buf[RD_KEY_BASE64_LEN + 1];
    text += strspn(text, " \t\r\n");
    size_t n = strlen(text);
    while (n && strchr(" \t\r\n", text[n - 1]))
        n--;
    bool ok = n == RD_KEY_BASE64_LEN;
    if (ok) {
        memcpy(buf, text, n);
        buf[n] = '\0';
        ok = decode_key(buf, key);
        sodium_memzero(buf, sizeof buf);
    }
    if (ok) return 0;
    sodium_memzero(key, RD_ENVELOPE_KEY_LEN);
    snprintf(err, errlen, "not a base64 key of %d bytes (%d characters, as `ringd keygen` prints)",
             RD_ENVELOPE_KEY_LEN, RD_KEY_BASE64_LEN);
    return RD_EINVAL;
}

int rd_keyring_find(const struct rd_keyring *kr, const char *prefix, size_t *index, char *err,
                    size_t errlen)
{
    size_t n = strlen(prefix);
    if (n == 0 || n > RD_KEY_FINGERPRINT_LEN || strspn(prefix, "0123456789abcdefABCDEF") != n) {
        snprintf(err, errlen, "not a key fingerprint: expected 1 to %d hex digits",
                 RD_KEY_FINGERPRINT_LEN);
        return RD_EINVAL;
    }
    size_t found = 0;
    for (size_t i = 0; i < kr->nkeys; i++) {
        char fp[RD_KEY_FINGERPRINT_LEN + 1];
        rd_keyring_fingerprint(kr->keys[i], fp);
        if (strncasecmp(fp, prefix, n) == 0) {
            if (found++ == 0) *index = i;
        }
    }
    if (found == 1) return 0;
    if (found == 0) {
        snprintf(err, errlen, "no key with fingerprint %s in the keyring", prefix);
        return RD_ENOENT;
    }
    snprintf(err, errlen, "fingerprint %s is ambiguous: %zu keys start with it; give more digits",
             prefix, found);
    return RD_EINVAL;
}

int rd_keyring_install(struct rd_keyring *kr, const char *base64,
                       char fp[RD_KEY_FINGERPRINT_LEN + 1], char *err, size_t errlen)
{
    uint8_t key[RD_ENVELOPE_KEY_LEN];
    int rc = rd_keyring_parse_key(base64, key, err, errlen);
    if (rc < 0) return rc;
    char name[RD_KEY_FINGERPRINT_LEN + 1];
    rd_keyring_fingerprint(key, name);
    for (size_t i = 0; i < kr->nkeys && rc == 0; i++)
        if (sodium_memcmp(kr->keys[i], key, sizeof key) == 0) {
            snprintf(err, errlen, "key %s is already in the keyring", name);
            rc = RD_EEXIST;
        }
    if (rc == 0 && kr->nkeys == RD_KEYRING_MAX) {
        snprintf(err, errlen, "the keyring is full (%d keys): remove one first", RD_KEYRING_MAX);
        rc = RD_E2BIG;
    }
    if (rc == 0) {
        memcpy(kr->keys[kr->nkeys++], key, sizeof key);
        if (fp) memcpy(fp, name, sizeof name);
    }
    sodium_memzero(key, sizeof key);
    return rc;
}

int rd_keyring_use(struct rd_keyring *kr, const char *fingerprint,
                   char fp[RD_KEY_FINGERPRINT_LEN + 1], char *err, size_t errlen)
{
    size_t i;
    int rc = rd_keyring_find(kr, fingerprint, &i, err, errlen);
    if (rc < 0) return rc;
    if (i > 0) {
        uint8_t key[RD_ENVELOPE_KEY_LEN];
        memcpy(key, kr->keys[i], sizeof key);
        memmove(kr->keys[1], kr->keys[0], i * sizeof kr->keys[0]);
        memcpy(kr->keys[0], key, sizeof key);
        sodium_memzero(key, sizeof key);
    }
    if (fp) rd_keyring_fingerprint(kr->keys[0], fp);
    return 0;
}

int rd_keyring_remove(struct rd_keyring *kr, const char *fingerprint,
                      char fp[RD_KEY_FINGERPRINT_LEN + 1], char *err, size_t errlen)
{
    size_t i;
    int rc = rd_keyring_find(kr, fingerprint, &i, err, errlen);
    if (rc < 0) return rc;
    char name[RD_KEY_FINGERPRINT_LEN + 1];
    rd_keyring_fingerprint(kr->keys[i], name);
    if (i == 0) {
        snprintf(err, errlen,
                 "key %s is the primary, which seals what this agent sends: make another key "
                 "the primary first",
                 name);
        return RD_EREFUSED;
    }
    memmove(kr->keys[i], kr->keys[i + 1], (kr->nkeys - i - 1) * sizeof kr->keys[0]);
    sodium_memzero(kr->keys[--kr->nkeys], sizeof kr->keys[0]);
    if (fp) memcpy(fp, name, sizeof name);
    return 0;
}

bool rd_keyring_equal(const struct rd_keyring *a, const struct rd_keyring *b)
{
    if (a->nkeys != b->nkeys) return false;
    for (size_t i = 0; i < a->nkeys; i++)
        if (sodium_memcmp(a->keys[i], b->keys[i], RD_ENVELOPE_KEY_LEN) != 0) return false;
    return true;
}

/* The file's text for kr into out (RD_KEYRING_TEXT_MAX bytes); its length. */
#define RD_KEYRING_TEXT_MAX                                                                        \
    (128 + RD_KEYRING_MAX * (RD_KEY_BASE64_LEN + RD_KEY_FINGERPRINT_LEN + 32))

static size_t keyring_text(const struct rd_keyring *kr, char *out)
{
    size_t n = (size_t)snprintf(out, RD_KEYRING_TEXT_MAX,
                                "# ringd gossip keys, one per line, the first seals (written by "
                                "the agent; comments are not kept)\n");
    for (size_t i = 0; i < kr->nkeys; i++) {
        char fp[RD_KEY_FINGERPRINT_LEN + 1];
        rd_keyring_fingerprint(kr->keys[i], fp);
        n += (size_t)snprintf(out + n, RD_KEYRING_TEXT_MAX - n, "# %s%s\n", fp,
                              i == 0 ? " primary" : "");
        sodium_bin2base64(out + n, RD_KEY_BASE64_LEN + 1, kr->keys[i], RD_ENVELOPE_KEY_LEN,
                          sodium_base64_VARIANT_ORIGINAL);
        n += RD_KEY_BASE64_LEN;
        out[n++] = '\n';
    }
    return n;
}

int rd_keyring_save(const struct rd_keyring *kr, const char *path, char *err, size_t errlen)
{
    if (kr->nkeys == 0) {
        snprintf(err, errlen, "cannot save the keyring: it has no key");
        return RD_EINVAL;
    }
    char real[PATH_MAX];
    const char *target = realpath(path, real) ? real : path; /* the file a link points to */
    char text[RD_KEYRING_TEXT_MAX];
    size_t len = keyring_text(kr, text);
    int rc = rd_files_replace("keyring", target, text, len, err, errlen);
    sodium_memzero(text, sizeof text);
    return rc;
}

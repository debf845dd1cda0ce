/*
 * test_keyring.c — the gossip keyring file (agent/keyring.h) and the start-up checks built
 * on it (rd_config_secure: --keyring-file, --cluster, protected mode, the verify switches).
 *
 * Each case writes a keyring file in a fresh temporary directory with the mode it needs,
 * loads it and checks the keys (order kept, comments skipped) or the one-line refusal.
 * The rotation cases change a ring in memory (install, use, remove: every refusal leaves
 * the ring as it was) and save it, including the ways a save can fail: each failure must
 * leave the old file whole and no PATH.tmp behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "config.h"
#include "keyring.h"
#include "rd_err.h"

static char dir[64];
static char path[128];

static int setup(void **state)
{
    if (sodium_init() < 0) return -1;
    snprintf(dir, sizeof dir, "/tmp/rd-keyring-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    snprintf(path, sizeof path, "%s/keys", dir);
    return 0;
}

static int teardown(void **state)
{
    char p[192];
    const char *names[] = {"keys", "keys.tmp", "sub/keys", "sub", "real", "link"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (unlink(p) < 0) rmdir(p);
    }
    return rmdir(dir);
}

static void write_file(const char *text, mode_t mode)
{
    unlink(path);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

/* Key i: 32 bytes of value i, in base64. */
static void key_text(int i, char out[RD_KEY_BASE64_LEN + 1], uint8_t raw[RD_ENVELOPE_KEY_LEN])
{
    memset(raw, i, RD_ENVELOPE_KEY_LEN);
    sodium_bin2base64(out, RD_KEY_BASE64_LEN + 1, raw, RD_ENVELOPE_KEY_LEN,
                      sodium_base64_VARIANT_ORIGINAL);
}

static void test_load_keeps_order_and_skips_comments(void **state)
{
    char k1[64], k2[64], text[512];
    uint8_t r1[32], r2[32];
    key_text(1, k1, r1);
    key_text(2, k2, r2);
    snprintf(text, sizeof text, "# cluster keys\n\n%s\n   \n  # old key, still accepted\n  %s  \n",
             k2, k1);
    write_file(text, 0600);
    struct rd_keyring kr;
    char err[256] = "";
    assert_int_equal(rd_keyring_load(&kr, path, err, sizeof err), 0);
    assert_int_equal(kr.nkeys, 2);
    assert_memory_equal(kr.keys[0], r2, 32); /* the first line is the primary */
    assert_memory_equal(kr.keys[1], r1, 32);
    write_file(k1, 0400); /* no final newline; read-only is fine */
    assert_int_equal(rd_keyring_load(&kr, path, err, sizeof err), 0);
    assert_int_equal(kr.nkeys, 1);
}

struct bad_case {
    const char *text;
    mode_t mode;
    const char *want; /* a piece of the error line */
};

static void test_load_refusals(void **state)
{
    char k1[64], both[256];
    uint8_t r1[32];
    key_text(1, k1, r1);
    snprintf(both, sizeof both, "%s\n%s\n", k1, k1);
    char k1_short[64];
    snprintf(k1_short, sizeof k1_short, "%.40s\n", k1);
    const struct bad_case cases[] = {
        {k1, 0644, "group or others can access it (mode 644): chmod 600 it"},
        {k1, 0640, "group or others can access it (mode 640)"},
        {k1, 0604, "group or others can access it (mode 604)"},
        {k1, 0620, "group or others can access it (mode 620)"},
        {"", 0600, ": no key"},
        {"# only a comment\n\n", 0600, ": no key"},
        {"not base64 at all\n", 0600, ":1: not a base64 key of 32 bytes"},
        {k1_short, 0600, ":1: not a base64 key of 32 bytes"},
        {"AAAA\n", 0600, ":1: not a base64 key of 32 bytes"},
        {both, 0600, ":2: key repeated"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(cases[i].text, cases[i].mode);
        struct rd_keyring kr;
        char err[256] = "";
        assert_int_equal(rd_keyring_load(&kr, path, err, sizeof err), RD_EINVAL);
        if (!strstr(err, cases[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, err, cases[i].want);
        assert_null(strchr(err, '\n'));
        assert_int_equal(kr.nkeys, 0);
        assert_null(strstr(err, k1)); /* a key is never printed */
    }
    /* too many keys */
    char many[64 * (RD_KEYRING_MAX + 1)] = "";
    for (int i = 0; i <= RD_KEYRING_MAX; i++) {
        char k[64];
        uint8_t r[32];
        key_text(i + 10, k, r);
        strcat(many, k);
        strcat(many, "\n");
        if (i == RD_KEYRING_MAX - 1) {
            write_file(many, 0600);
            struct rd_keyring kr;
            char err[256];
            assert_int_equal(rd_keyring_load(&kr, path, err, sizeof err), 0);
            assert_int_equal(kr.nkeys, RD_KEYRING_MAX);
        }
    }
    write_file(many, 0600);
    struct rd_keyring kr;
    char err[256] = "";
    assert_int_equal(rd_keyring_load(&kr, path, err, sizeof err), RD_EINVAL);
    assert_non_null(strstr(err, "more than 16 keys"));
    /* not a regular file, and a missing one */
    assert_int_equal(rd_keyring_load(&kr, dir, err, sizeof err), RD_EINVAL);
    assert_non_null(strstr(err, "not a regular file"));
    unlink(path);
    assert_int_equal(rd_keyring_load(&kr, path, err, sizeof err), RD_EINVAL);
    assert_non_null(strstr(err, "No such file"));
}

static void test_generate_and_fingerprint(void **state)
{
    char a[RD_KEY_BASE64_LEN + 1], b[RD_KEY_BASE64_LEN + 1];
    rd_keyring_generate(a);
    rd_keyring_generate(b);
    assert_int_equal(strlen(a), RD_KEY_BASE64_LEN);
    assert_string_not_equal(a, b);
    uint8_t raw[64];
    size_t got;
    assert_int_equal(sodium_base642bin(raw, sizeof raw, a, strlen(a), NULL, &got, NULL,
                                       sodium_base64_VARIANT_ORIGINAL),
                     0);
    assert_int_equal(got, RD_ENVELOPE_KEY_LEN);
    /* a generated key loads */
    char text[80];
    snprintf(text, sizeof text, "%s\n", a);
    write_file(text, 0600);
    struct rd_keyring kr;
    char err[256];
    assert_int_equal(rd_keyring_load(&kr, path, err, sizeof err), 0);
    assert_memory_equal(kr.keys[0], raw, 32);
    /* fingerprints: 16 hex digits, stable, different per key, not the key's own bytes */
    char f1[RD_KEY_FINGERPRINT_LEN + 1], f2[RD_KEY_FINGERPRINT_LEN + 1],
        f3[RD_KEY_FINGERPRINT_LEN + 1], hexkey[65];
    uint8_t zero[32] = {0}, one[32] = {1};
    rd_keyring_fingerprint(zero, f1);
    rd_keyring_fingerprint(zero, f2);
    rd_keyring_fingerprint(one, f3);
    assert_int_equal(strlen(f1), RD_KEY_FINGERPRINT_LEN);
    assert_string_equal(f1, f2);
    assert_string_not_equal(f1, f3);
    sodium_bin2hex(hexkey, sizeof hexkey, zero, 32);
    assert_null(strstr(hexkey, f1));
    /* BLAKE2b-256 of 32 zero bytes, its first 8 bytes */
    uint8_t h[32];
    char want[17];
    crypto_generichash(h, 32, zero, 32, NULL, 0);
    sodium_bin2hex(want, sizeof want, h, 8);
    assert_string_equal(f1, want);
}

/* Parses argv (a NULL-terminated list after "agent") and runs the security checks. */
static int secure(const char *const *args, struct rd_agent_config *cfg, char *err, size_t errlen)
{
    char *argv[16] = {"agent"};
    int argc = 1;
    for (; args[argc - 1]; argc++)
        argv[argc] = (char *)args[argc - 1];
    int rc = rd_config_parse(cfg, argc, argv, err, errlen);
    return rc < 0 ? rc : rd_config_secure(cfg, err, errlen);
}

static void test_protected_mode(void **state)
{
    struct rd_agent_config cfg;
    char err[512];
    const char *loop4[] = {"--name", "a", "--bind", "127.0.0.1:7000", NULL};
    const char *loop6[] = {"--name", "a", "--bind", "[::1]:7000", NULL};
    const char *any[] = {"--name", "a", "--bind", "0.0.0.0:7000", NULL};
    const char *adv[] = {"--name",      "a",        "--bind", "127.0.0.1:7000",
                         "--advertise", "10.1.2.3", NULL};
    const char *insecure[] = {"--name", "a", "--bind", "0.0.0.0:7000", "--insecure-gossip", NULL};
    const char *off[] = {"--name", "a", "--bind", "0.0.0.0:7000", "--insecure-gossip=false", NULL};
    assert_int_equal(secure(loop4, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.keyring.nkeys, 0);
    assert_int_equal(secure(loop6, &cfg, err, sizeof err), 0);
    assert_int_equal(secure(any, &cfg, err, sizeof err), RD_EINVAL);
    assert_non_null(strstr(err, "--keyring-file"));
    assert_non_null(strstr(err, "--insecure-gossip"));
    assert_int_equal(secure(adv, &cfg, err, sizeof err), RD_EINVAL);
    assert_int_equal(secure(insecure, &cfg, err, sizeof err), 0);
    assert_int_equal(secure(off, &cfg, err, sizeof err), RD_EINVAL);
    /* a keyring is the other way out, and is loaded */
    char k[64], text[80];
    uint8_t raw[32];
    key_text(7, k, raw);
    snprintf(text, sizeof text, "%s\n", k);
    write_file(text, 0600);
    const char *keyed[] = {"--name",    "a",      "--bind", "0.0.0.0:7000", "--keyring-file", path,
                           "--cluster", "prod-1", NULL};
    assert_int_equal(secure(keyed, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.keyring.nkeys, 1);
    assert_memory_equal(cfg.keyring.keys[0], raw, 32);
    assert_string_equal(cfg.cluster, "prod-1");
    chmod(path, 0644);
    assert_int_equal(secure(keyed, &cfg, err, sizeof err), RD_EINVAL);
    assert_non_null(strstr(err, "chmod 600"));
    /* the verify switches: only with a keyring, never clear out and strict in */
    chmod(path, 0600);
    const char *mig1[] = {"--name",
                          "a",
                          "--bind",
                          "0.0.0.0:7000",
                          "--keyring-file",
                          path,
                          "--gossip-verify-incoming",
                          "off",
                          "--gossip-verify-outgoing",
                          "off",
                          NULL};
    assert_int_equal(secure(mig1, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.gossip_verify_incoming, RD_SWITCH_OFF);
    assert_int_equal(cfg.gossip_verify_outgoing, RD_SWITCH_OFF);
    assert_int_equal(cfg.keyring.nkeys, 1);
    const char *mig2[] = {"--name", "a", "--keyring-file", path, "--gossip-verify-incoming=off",
                          NULL};
    assert_int_equal(secure(mig2, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.gossip_verify_incoming, RD_SWITCH_OFF);
    assert_int_equal(cfg.gossip_verify_outgoing, RD_SWITCH_ON); /* unset reads on */
    assert_int_equal(secure(keyed, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.gossip_verify_incoming, RD_SWITCH_ON);
    assert_int_equal(cfg.gossip_verify_outgoing, RD_SWITCH_ON);
    const char *backwards[] = {"--name", "a", "--keyring-file", path, "--gossip-verify-outgoing",
                               "off",    NULL};
    assert_int_equal(secure(backwards, &cfg, err, sizeof err), RD_EINVAL);
    assert_string_equal(err, "--gossip-verify-outgoing off needs --gossip-verify-incoming off: an "
                             "agent that sends in the clear but refuses it cannot hear its peers");
    const char *nokeys_in[] = {
        "--name", "a", "--bind", "127.0.0.1:7000", "--gossip-verify-incoming", "off", NULL};
    assert_int_equal(secure(nokeys_in, &cfg, err, sizeof err), RD_EINVAL);
    assert_string_equal(err, "--gossip-verify-incoming means nothing without --keyring-file PATH");
    const char *nokeys_out[] = {
        "--name", "a", "--bind", "127.0.0.1:7000", "--gossip-verify-outgoing=on", NULL};
    assert_int_equal(secure(nokeys_out, &cfg, err, sizeof err), RD_EINVAL);
    assert_string_equal(err, "--gossip-verify-outgoing means nothing without --keyring-file PATH");
    /* the cluster label is checked like a zone */
    const char *badlabel[] = {"--name", "a", "--bind", "127.0.0.1:7000", "--cluster", "a b", NULL};
    assert_int_equal(secure(badlabel, &cfg, err, sizeof err), RD_EINVAL);
    assert_string_equal(err, "--cluster: 'a b' is not a valid cluster (up to 32 of A-Z a-z 0-9 . _ "
                             "- : @)");
}

/* A ring of keys 1..n (key i: 32 bytes of value i), primary first. */
static void ring_of(struct rd_keyring *kr, int n)
{
    memset(kr, 0, sizeof *kr);
    for (int i = 1; i <= n; i++) {
        char k[64];
        uint8_t raw[32];
        key_text(i, k, raw);
        char err[256];
        assert_int_equal(rd_keyring_install(kr, k, NULL, err, sizeof err), 0);
    }
}

static void fp_of(int i, char out[RD_KEY_FINGERPRINT_LEN + 1])
{
    char k[64];
    uint8_t raw[32];
    key_text(i, k, raw);
    rd_keyring_fingerprint(raw, out);
}

/* True if the ring's keys are the keys of values want[0..n), in that order. */
static bool ring_is(const struct rd_keyring *kr, const int *want, size_t n)
{
    if (kr->nkeys != n) return false;
    for (size_t i = 0; i < n; i++) {
        char k[64];
        uint8_t raw[32];
        key_text(want[i], k, raw);
        if (memcmp(kr->keys[i], raw, 32) != 0) return false;
    }
    return true;
}

static void test_rotation_install_use_remove(void **state)
{
    struct rd_keyring kr = {0};
    char k1[64], k2[64], k3[64], err[256], fp[RD_KEY_FINGERPRINT_LEN + 1], want[17];
    uint8_t raw[32];
    key_text(1, k1, raw);
    key_text(2, k2, raw);
    key_text(3, k3, raw);
    /* install appends: the primary stays; blanks around the text are fine */
    assert_int_equal(rd_keyring_install(&kr, k1, fp, err, sizeof err), 0);
    fp_of(1, want);
    assert_string_equal(fp, want);
    char padded[80];
    snprintf(padded, sizeof padded, "  %s\n", k2);
    assert_int_equal(rd_keyring_install(&kr, padded, fp, err, sizeof err), 0);
    fp_of(2, want);
    assert_string_equal(fp, want);
    assert_int_equal(rd_keyring_install(&kr, k3, NULL, err, sizeof err), 0);
    assert_true(ring_is(&kr, (int[]){1, 2, 3}, 3));
    /* use moves a key to the front, the others keep their order; by a prefix, any case */
    char fp3[17], prefix[8];
    fp_of(3, fp3);
    for (int i = 0; i < 6; i++)
        prefix[i] = (char)(fp3[i] >= 'a' ? fp3[i] - 'a' + 'A' : fp3[i]);
    prefix[6] = '\0';
    assert_int_equal(rd_keyring_use(&kr, prefix, fp, err, sizeof err), 0);
    assert_string_equal(fp, fp3); /* the full fingerprint back */
    assert_true(ring_is(&kr, (int[]){3, 1, 2}, 3));
    assert_int_equal(rd_keyring_use(&kr, fp3, NULL, err, sizeof err), 0); /* already: no-op */
    assert_true(ring_is(&kr, (int[]){3, 1, 2}, 3));
    /* remove keeps the order of the rest */
    char fp1[17];
    fp_of(1, fp1);
    assert_int_equal(rd_keyring_remove(&kr, fp1, fp, err, sizeof err), 0);
    assert_string_equal(fp, fp1);
    assert_true(ring_is(&kr, (int[]){3, 2}, 2));
    uint8_t zero[32] = {0};
    assert_memory_equal(kr.keys[2], zero, 32); /* the freed slot holds no key */
    /* a full rotation ends with the new key alone */
    char fp2[17];
    fp_of(2, fp2);
    assert_int_equal(rd_keyring_use(&kr, fp2, NULL, err, sizeof err), 0);
    assert_int_equal(rd_keyring_remove(&kr, fp3, NULL, err, sizeof err), 0);
    assert_true(ring_is(&kr, (int[]){2}, 1));
}

static void test_rotation_refusals_change_nothing(void **state)
{
    struct rd_keyring kr, before;
    char err[256] = "", k1[64];
    uint8_t raw[32];
    key_text(1, k1, raw);
    ring_of(&kr, 3);
    before = kr;
    /* a key already there */
    assert_int_equal(rd_keyring_install(&kr, k1, NULL, err, sizeof err), RD_EEXIST);
    char fp1[17];
    fp_of(1, fp1);
    assert_non_null(strstr(err, fp1));
    assert_non_null(strstr(err, "already in the keyring"));
    assert_null(strstr(err, k1));
    /* text that is not one key: never echoed */
    char longer[80], shorter[64];
    snprintf(longer, sizeof longer, "%sAAAA", k1);
    snprintf(shorter, sizeof shorter, "%.40s", k1);
    const char *bad[] = {"",
                         "not base64 at all",
                         shorter,
                         longer,
                         "AAAA",
                         "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!",
                         "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8 " /* 43 + blank */};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(rd_keyring_install(&kr, bad[i], NULL, err, sizeof err), RD_EINVAL);
        assert_non_null(strstr(err, "not a base64 key of 32 bytes"));
        if (strlen(bad[i]) > 4) assert_null(strstr(err, bad[i]));
    }
    uint8_t key[32];
    assert_int_equal(rd_keyring_parse_key(shorter, key, err, sizeof err), RD_EINVAL);
    assert_int_equal(rd_keyring_parse_key(k1, key, err, sizeof err), 0);
    assert_memory_equal(key, raw, 32);
    /* an absent key cannot be used or removed */
    char fp9[17];
    fp_of(9, fp9);
    assert_int_equal(rd_keyring_use(&kr, fp9, NULL, err, sizeof err), RD_ENOENT);
    assert_non_null(strstr(err, "no key with fingerprint"));
    assert_non_null(strstr(err, fp9));
    assert_int_equal(rd_keyring_remove(&kr, fp9, NULL, err, sizeof err), RD_ENOENT);
    /* the primary cannot be removed */
    assert_int_equal(rd_keyring_remove(&kr, fp1, NULL, err, sizeof err), RD_EREFUSED);
    assert_non_null(strstr(err, fp1));
    assert_non_null(strstr(err, "is the primary"));
    /* not a fingerprint */
    const char *notfp[] = {"", "xyz", "0123456789abcdef0", "12 34", "-1"};
    for (size_t i = 0; i < sizeof notfp / sizeof notfp[0]; i++) {
        assert_int_equal(rd_keyring_use(&kr, notfp[i], NULL, err, sizeof err), RD_EINVAL);
        assert_string_equal(err, "not a key fingerprint: expected 1 to 16 hex digits");
    }
    assert_true(rd_keyring_equal(&kr, &before));
    /* full */
    ring_of(&kr, RD_KEYRING_MAX);
    before = kr;
    char k99[64];
    key_text(99, k99, raw);
    assert_int_equal(rd_keyring_install(&kr, k99, NULL, err, sizeof err), RD_E2BIG);
    assert_string_equal(err, "the keyring is full (16 keys): remove one first");
    assert_true(rd_keyring_equal(&kr, &before));
}

/* A prefix that two keys share is refused; one more digit that tells them apart works. */
static void test_rotation_ambiguous_prefix(void **state)
{
    struct rd_keyring kr;
    ring_of(&kr, RD_KEYRING_MAX);
    /* with 16 keys, two fingerprints share a first digit or all 16 digits differ */
    char fps[RD_KEYRING_MAX][17];
    int a = -1, b = -1;
    for (int i = 0; i < RD_KEYRING_MAX; i++) {
        rd_keyring_fingerprint(kr.keys[i], fps[i]);
        for (int j = 0; j < i && a < 0; j++)
            if (fps[i][0] == fps[j][0]) a = j, b = i;
    }
    char err[256], prefix[17], fp[17];
    if (a >= 0) {
        snprintf(prefix, sizeof prefix, "%c", fps[a][0]);
        size_t at;
        assert_int_equal(rd_keyring_find(&kr, prefix, &at, err, sizeof err), RD_EINVAL);
        assert_non_null(strstr(err, "is ambiguous"));
        assert_non_null(strstr(err, "give more digits"));
        int n = 1;
        while (strncmp(fps[a], fps[b], (size_t)n) == 0)
            n++;
        snprintf(prefix, sizeof prefix, "%.*s", n, fps[b]);
        assert_int_equal(rd_keyring_use(&kr, prefix, fp, err, sizeof err), 0);
        assert_string_equal(fp, fps[b]);
    } else {
        fail_msg("16 fingerprints with 16 different first digits: pick other test keys");
    }
}

static mode_t mode_of(const char *p)
{
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    return st.st_mode;
}

static bool exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

static void test_save_round_trip_mode_and_link(void **state)
{
    struct rd_keyring kr, back;
    char err[256], tmp[160];
    ring_of(&kr, 3);
    write_file("# a comment that goes\nold contents\n", 0644);
    mode_t old_umask = umask(0); /* the file is 0600 whatever the umask */
    int rc = rd_keyring_save(&kr, path, err, sizeof err);
    umask(old_umask);
    assert_int_equal(rc, 0);
    assert_string_equal(err, "");
    assert_int_equal(mode_of(path) & 07777, 0600);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_false(exists(tmp));
    assert_int_equal(rd_keyring_load(&back, path, err, sizeof err), 0);
    assert_true(rd_keyring_equal(&kr, &back));
    /* the file names each key by fingerprint, primary marked, and holds nothing else */
    char text[2048] = "", fp[17], line[128];
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    fp_of(1, fp);
    snprintf(line, sizeof line, "\n# %s primary\n", fp);
    assert_non_null(strstr(text, line));
    assert_null(strstr(text, "old contents"));
    int keylines = 0;
    for (char *p = text; (p = strchr(p, '\n')) && p[1]; p++)
        if (p[1] != '#') keylines++;
    assert_int_equal(keylines, 3);
    /* a stale PATH.tmp from a crash is replaced */
    write_file("x", 0600);
    rename(path, tmp);
    assert_int_equal(rd_keyring_save(&kr, path, err, sizeof err), 0);
    assert_false(exists(tmp));
    /* through a symbolic link, the file it points to is replaced and the link stays */
    char real[160], link[160];
    snprintf(real, sizeof real, "%s/real", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    assert_int_equal(rename(path, real), 0);
    assert_int_equal(symlink("real", link), 0);
    ring_of(&kr, 1);
    assert_int_equal(rd_keyring_save(&kr, link, err, sizeof err), 0);
    assert_true(S_ISLNK(mode_of(link)));
    assert_int_equal(rd_keyring_load(&back, real, err, sizeof err), 0);
    assert_true(rd_keyring_equal(&kr, &back));
}

/* Each failure: RD_EIO or RD_EINVAL, one line naming the step, the old file whole, no tmp. */
static void expect_save_fails(const struct rd_keyring *kr, const char *at, int want_rc,
                              const char *want)
{
    char err[256] = "", tmp[200];
    snprintf(tmp, sizeof tmp, "%s.tmp", at);
    int rc = rd_keyring_save(kr, at, err, sizeof err);
    if (rc != want_rc || !strstr(err, want))
        fail_msg("save to %s: rc %d '%s', want %d '%s'", at, rc, err, want_rc, want);
    assert_null(strchr(err, '\n'));
}

static void test_save_failures_leave_the_old_file(void **state)
{
    struct rd_keyring kr, empty = {0}, back;
    char err[256], tmp[200], sub[160];
    ring_of(&kr, 2);
    write_file("AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\n", 0600); /* key 1 alone */
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    expect_save_fails(&empty, path, RD_EINVAL, "it has no key");
    /* the directory does not exist */
    snprintf(sub, sizeof sub, "%s/sub/keys", dir);
    expect_save_fails(&kr, sub, RD_EIO, "create");
    /* PATH.tmp cannot be made: a directory stands there */
    assert_int_equal(mkdir(tmp, 0700), 0);
    expect_save_fails(&kr, path, RD_EIO, "cannot save the keyring: remove stale");
    assert_int_equal(rmdir(tmp), 0);
    /* the write fails: a file size limit of 10 bytes (EFBIG, SIGXFSZ ignored) */
    struct rlimit was, small;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
    small = was;
    small.rlim_cur = 10;
    void (*old)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    char werr[256] = "";
    int rc = rd_keyring_save(&kr, path, werr, sizeof werr);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
    signal(SIGXFSZ, old);
    assert_int_equal(rc, RD_EIO);
    assert_non_null(strstr(werr, "write"));
    assert_false(exists(tmp));
    assert_int_equal(rd_keyring_load(&back, path, err, sizeof err), 0);
    assert_true(ring_is(&back, (int[]){1}, 1)); /* the old file, whole */
    /* the rename fails: a directory stands at PATH */
    snprintf(sub, sizeof sub, "%s/sub", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    expect_save_fails(&kr, sub, RD_EIO, "rename");
    snprintf(tmp, sizeof tmp, "%s.tmp", sub);
    assert_false(exists(tmp));
    assert_true(S_ISDIR(mode_of(sub)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_keeps_order_and_skips_comments),
        cmocka_unit_test(test_load_refusals),
        cmocka_unit_test(test_generate_and_fingerprint),
        cmocka_unit_test(test_protected_mode),
        cmocka_unit_test(test_rotation_install_use_remove),
        cmocka_unit_test(test_rotation_refusals_change_nothing),
        cmocka_unit_test(test_rotation_ambiguous_prefix),
        cmocka_unit_test(test_save_round_trip_mode_and_link),
        cmocka_unit_test(test_save_failures_leave_the_old_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

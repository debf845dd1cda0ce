/*
 * test_keyring.c — the gossip keyring file (agent/keyring.h) and the start-up checks built
 * on it (rd_config_secure: --keyring-file, --cluster, protected mode, the verify switches).
 *
 * Each case writes a keyring file in a fresh temporary directory with the mode it needs,
 * loads it and checks the keys (order kept, comments skipped) or the one-line refusal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    unlink(path);
    rmdir(dir);
    return 0;
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_keeps_order_and_skips_comments),
        cmocka_unit_test(test_load_refusals),
        cmocka_unit_test(test_generate_and_fingerprint),
        cmocka_unit_test(test_protected_mode),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

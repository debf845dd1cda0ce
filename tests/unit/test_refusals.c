/*
 * test_refusals.c — the UDP socket's error queue (agent/refusals.h), on real loopback
 * sockets: a datagram to a port where nothing listens comes back as a refusal naming that
 * destination, a port that listens gives none, and the queue is drained to its end.
 */
#include <setjmp.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "member.h"
#include "refusals.h"

/* A UDP socket bound to 127.0.0.1 on a port of the kernel's choice; its port in *port. */
static int udp_socket(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    socklen_t len = sizeof sa;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

/* Sends one byte to 127.0.0.1:port; 0 or the errno. */
static int send_to(int fd, uint16_t port)
{
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    return sendto(fd, "x", 1, 0, (struct sockaddr *)&sa, sizeof sa) == 1 ? 0 : errno;
}

/* Waits up to a second for the socket to be in error (a refusal queued). */
static void wait_error(int fd)
{
    struct pollfd p = {.fd = fd, .events = 0}; /* POLLERR is always reported */
    assert_int_equal(poll(&p, 1, 1000), 1);
    assert_true(p.revents & POLLERR);
}

/* A closed port: the socket had one listening there a moment ago. */
static uint16_t closed_port(void)
{
    uint16_t port;
    close(udp_socket(&port));
    return port;
}

static void test_a_closed_port_is_reported_with_its_address(void **state)
{
    (void)state;
    uint16_t mine, shut = closed_port(), open_port;
    int fd = udp_socket(&mine), open_fd = udp_socket(&open_port);
    assert_int_equal(rd_refusals_enable(fd, 4), 0);

    assert_int_equal(send_to(fd, open_port), 0); /* answered by nobody, refused by nobody */
    assert_int_equal(send_to(fd, shut), 0);
    wait_error(fd);
    /* The socket's pending error fails the next send, wherever it goes: that datagram is
     * not sent (the agent drains and sends it again). The error queue keeps the refusal. */
    assert_int_equal(send_to(fd, open_port), ECONNREFUSED);
    struct rd_addr got[8];
    assert_int_equal(rd_refusals_drain(fd, got, 8, NULL), 1);
    assert_int_equal(got[0].family, 4);
    assert_int_equal(got[0].port, shut);
    char text[64], want[64];
    rd_addr_format(&got[0], text, sizeof text);
    snprintf(want, sizeof want, "127.0.0.1:%u", shut);
    assert_string_equal(text, want);
    /* drained: nothing more, the socket is no longer in error, and sends go out */
    assert_int_equal(rd_refusals_drain(fd, got, 8, NULL), 0);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 50), 0);
    assert_int_equal(send_to(fd, open_port), 0);
    char buf[4];
    assert_int_equal(recv(open_fd, buf, sizeof buf, MSG_DONTWAIT), 1);
    assert_int_equal(recv(open_fd, buf, sizeof buf, MSG_DONTWAIT), 1);
    close(fd);
    close(open_fd);
}

static void test_the_queue_is_drained_past_the_room_given(void **state)
{
    (void)state;
    uint16_t mine, shut = closed_port();
    int fd = udp_socket(&mine);
    assert_int_equal(rd_refusals_enable(fd, 4), 0);
    for (int i = 0; i < 5; i++) {
        int rc = send_to(fd, shut);
        assert_true(rc == 0 || rc == ECONNREFUSED); /* the previous one's refusal */
        wait_error(fd);
    }
    struct rd_addr one[1];
    size_t other = 99;
    assert_int_equal(rd_refusals_drain(fd, one, 1, &other), 1);
    assert_int_equal(other, 0);
    assert_int_equal(one[0].port, shut);
    /* the others (each send that went out was refused) were read and dropped */
    assert_int_equal(rd_refusals_drain(fd, one, 1, NULL), 0);
    struct pollfd p = {.fd = fd, .events = 0};
    assert_int_equal(poll(&p, 1, 0), 0);
    close(fd);
}

static void test_without_the_option_nothing_is_queued(void **state)
{
    (void)state;
    uint16_t mine, shut = closed_port();
    int fd = udp_socket(&mine);
    assert_int_equal(send_to(fd, shut), 0);
    usleep(100 * 1000);
    assert_int_equal(send_to(fd, shut), 0);
    struct rd_addr got[4];
    assert_int_equal(rd_refusals_drain(fd, got, 4, NULL), 0);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_closed_port_is_reported_with_its_address),
        cmocka_unit_test(test_the_queue_is_drained_past_the_room_given),
        cmocka_unit_test(test_without_the_option_nothing_is_queued),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

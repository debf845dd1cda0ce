/* rd_err.c — text for the error codes of rd_err.h. */
#include "rd_err.h"

const char *rd_strerror(int err)
{
    /* one code a line reads as the table it is */
    /* clang-format off */
    switch (err) {
    case RD_OK: return "ok";
    case RD_EINVAL: return "invalid argument";
    case RD_ENOMEM: return "out of memory";
    case RD_E2BIG: return "over a limit";
    case RD_EEXIST: return "already exists";
    case RD_EPROTO: return "malformed message";
    case RD_ENOENT: return "not found";
    case RD_EAGAIN: return "incomplete";
    case RD_EIO: return "system call or socket failed";
    case RD_EREFUSED: return "refused";
    case RD_ECORRUPT: return "internal state corrupt";
    case RD_ECANCELED: return "abandoned";
    }
    /* clang-format on */
    return "unknown error";
}

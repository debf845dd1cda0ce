/* rd_err.c — text for the error codes of rd_err.h. */
#include "rd_err.h"

const char *rd_strerror(int err)
{
    switch (err) {
    case RD_OK: return "ok";
    case RD_EINVAL: return "invalid argument";
    case RD_ENOMEM: return "out of memory";
    case RD_E2BIG: return "over a limit";
    case RD_EEXIST: return "already exists";
    case RD_EPROTO: return "malformed message";
    case RD_ENOENT: return "not found";
    case RD_EAGAIN: return "incomplete";
    }
    return "unknown error";
}

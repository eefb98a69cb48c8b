#ifndef LOCATIONGATE_CLIBPQ_SHIM_H
#define LOCATIONGATE_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#include <poll.h>
#endif

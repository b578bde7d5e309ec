// The whole public API of libasyncps. See docs/USING.md for a complete program.
#pragma once
#include "asyncps/error.h"
#include "asyncps/log.h"
#include "asyncps/mpi_environment.h"
#include "asyncps/param_layout.h"
#include "asyncps/parameter_server.h"
#include "asyncps/roles.h"
#include "asyncps/session.h"
#include "asyncps/shadow_store.h"
#include "asyncps/staleness.h"
#include "asyncps/step_loop.h"
#include "asyncps/version.h"
#include "asyncps/worker_client.h"

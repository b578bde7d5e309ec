// defines: asyncps::detail::hold_termination_signal, release_termination_signal, termination_requested
// SIGTERM, for as long as a Session is open: what Slurm's scancel and its pre-emption send to
// every task (then SIGKILL after the cluster's KillWait, 30 s by default), and what mpirun
// forwards to every rank. A Session takes it only where its disposition is the default (a
// program's own handler, or an ignored SIGTERM, is left alone); the handler only sets a flag.
// On the flag a worker's next StepLoop::begin_step, or a server's next round of serve(), asks
// every rank to stop (a halt that says why): the workers stop stepping, the servers save their
// final checkpoint, and StepLoop::terminated() / ParameterServer::terminated() say so after.
#pragma once

namespace asyncps::detail {

// Nested holds count: the first installs the handler, the last restores the default.
void hold_termination_signal() noexcept;
void release_termination_signal() noexcept;
// Whether SIGTERM arrived while held (stays true).
bool termination_requested() noexcept;

}  // namespace asyncps::detail

# asyncps_add_mpi_test(NAME <name> NP <ranks> COMMAND <exe> [args...] [TIMEOUT s] [MPIEXEC_ARGS ...])
# Registers a ctest test that runs <exe> under mpirun with NP ranks, always under a timeout.
# The launcher and its arguments come from cmake/AsyncpsMpi.cmake (ASYNCPS_MPIRUN).
# The test name carries the rank count (…_np3) as the project's convention.
# asyncps_unavailable_test(<name> <label> <why>): one test that shows as skipped (exit 77) with
# the reason, where a group of tests cannot run on this machine (no namespaces, no Slurm).
# (The reason is passed as an argument, never spliced into the shell's text: quotes stay text.)
function(asyncps_unavailable_test name label why)
  add_test(NAME ${name} COMMAND sh -c "echo \"SKIP: $1\"; exit 77" sh "${why}")
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS "${label}")
endfunction()

function(asyncps_add_mpi_test)
  cmake_parse_arguments(T "" "NAME;NP;TIMEOUT" "COMMAND;MPIEXEC_ARGS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_test(NAME ${T_NAME}
    COMMAND timeout -k 5 ${T_TIMEOUT} ${ASYNCPS_MPIRUN} ${MPIEXEC_NUMPROC_FLAG} ${T_NP}
            ${T_MPIEXEC_ARGS} ${MPIEXEC_PREFLAGS} ${T_COMMAND} ${MPIEXEC_POSTFLAGS})
  set_tests_properties(${T_NAME} PROPERTIES
    TIMEOUT ${T_TIMEOUT} PROCESSORS ${T_NP} LABELS "mpi;${T_LABELS}"
    ENVIRONMENT "${ASYNCPS_MPI_TEST_ENV}")
endfunction()

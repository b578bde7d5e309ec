# asyncps_add_mpi_test(NAME <name> NP <ranks> COMMAND <exe> [args...] [TIMEOUT s] [MPIEXEC_ARGS ...])
# Registers a ctest test that runs <exe> under mpirun with NP ranks, always under a timeout.
# The launcher and its arguments come from cmake/AsyncpsMpi.cmake (ASYNCPS_MPIRUN).
# The test name carries the rank count (…_np3) as the project's convention.
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

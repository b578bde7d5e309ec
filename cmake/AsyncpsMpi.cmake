# Which MPI the build uses, and how its tests launch jobs.
#
#   -DASYNCPS_MPI=openmpi|mpich   the Debian names of the two (mpicc.openmpi / mpicc.mpich and
#                                 their mpiexec); default: whatever CMake's FindMPI finds, which
#                                 the standard hints steer (MPI_HOME, MPI_C_COMPILER,
#                                 MPI_CXX_COMPILER, MPIEXEC_EXECUTABLE)
#
# After it: MPI::MPI_C, MPIEXEC_EXECUTABLE (the launcher that belongs to that MPI), and
#   ASYNCPS_MPI_FAMILY        openmpi | mpich | other (from MPI_Get_library_version)
#   ASYNCPS_MPIRUN            the launcher with what every test job gives it (a list)
#   ASYNCPS_MPIRUN_NEEDS_TARGET_ARGS  arguments that make one node behave as between hosts
#                             (one-sided operations that need the target): Open MPI's osc pt2pt;
#                             empty under MPICH, where they always need it
#   ASYNCPS_MPI_TEST_ENV      the environment every test job gets
set(ASYNCPS_MPI "" CACHE STRING "The MPI to build with: openmpi, mpich, or empty (FindMPI's choice)")
set_property(CACHE ASYNCPS_MPI PROPERTY STRINGS "" openmpi mpich)
if(ASYNCPS_MPI)
  if(NOT ASYNCPS_MPI MATCHES "^(openmpi|mpich)$")
    message(FATAL_ERROR "ASYNCPS_MPI must be openmpi or mpich (or empty), got '${ASYNCPS_MPI}'")
  endif()
  foreach(_tool C:mpicc CXX:mpicxx)
    string(REPLACE ":" ";" _tool "${_tool}")
    list(GET _tool 0 _lang)
    list(GET _tool 1 _name)
    if(NOT MPI_${_lang}_COMPILER)
      find_program(_asyncps_wrapper_${_lang} NAMES ${_name}.${ASYNCPS_MPI} REQUIRED)
      set(MPI_${_lang}_COMPILER ${_asyncps_wrapper_${_lang}} CACHE FILEPATH "MPI ${_lang} compiler wrapper")
    endif()
  endforeach()
  if(NOT MPIEXEC_EXECUTABLE)
    find_program(_asyncps_mpiexec NAMES mpiexec.${ASYNCPS_MPI} mpirun.${ASYNCPS_MPI} REQUIRED)
    set(MPIEXEC_EXECUTABLE ${_asyncps_mpiexec} CACHE FILEPATH "The launcher of the chosen MPI")
  endif()
endif()

set(MPI_DETERMINE_LIBRARY_VERSION ON)
find_package(MPI REQUIRED COMPONENTS C)

string(FIND "${MPI_C_LIBRARY_VERSION_STRING}" "Open MPI" _ompi)
string(REGEX MATCH "MPICH|Intel\\(R\\) MPI|MVAPICH" _mpich "${MPI_C_LIBRARY_VERSION_STRING}")
if(_ompi EQUAL 0)
  set(ASYNCPS_MPI_FAMILY openmpi)
elseif(_mpich)
  set(ASYNCPS_MPI_FAMILY mpich)
else()
  set(ASYNCPS_MPI_FAMILY other)
endif()
if(ASYNCPS_MPI AND NOT ASYNCPS_MPI STREQUAL ASYNCPS_MPI_FAMILY)
  message(FATAL_ERROR "ASYNCPS_MPI=${ASYNCPS_MPI}, but the MPI found says: ${MPI_C_LIBRARY_VERSION_STRING}")
endif()

# FindMPI takes the first mpiexec on PATH, which may belong to the other MPI (Debian's
# /usr/bin/mpiexec is Open MPI's whatever the compilers): a launcher must start this MPI's ranks.
execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _launcher ERROR_VARIABLE _launcher
                TIMEOUT 20)
if(ASYNCPS_MPI_FAMILY STREQUAL "mpich" AND NOT _launcher MATCHES "HYDRA|Intel|hydra")
  find_program(_asyncps_hydra NAMES mpiexec.mpich mpiexec.hydra)
  if(NOT _asyncps_hydra)
    message(FATAL_ERROR "the MPI is ${ASYNCPS_MPI_FAMILY}, but ${MPIEXEC_EXECUTABLE} is not its launcher: "
                        "give -DMPIEXEC_EXECUTABLE=<its mpiexec>")
  endif()
  set(MPIEXEC_EXECUTABLE ${_asyncps_hydra} CACHE FILEPATH "The launcher of the chosen MPI" FORCE)
elseif(ASYNCPS_MPI_FAMILY STREQUAL "openmpi" AND NOT _launcher MATCHES "Open MPI|OpenRTE")
  message(FATAL_ERROR "the MPI is Open MPI, but ${MPIEXEC_EXECUTABLE} is not its mpirun: "
                      "give -DMPIEXEC_EXECUTABLE=<its mpirun>")
endif()

if(ASYNCPS_MPI_FAMILY STREQUAL "openmpi")
  set(ASYNCPS_MPIRUN ${MPIEXEC_EXECUTABLE} --oversubscribe --bind-to none)
  set(ASYNCPS_MPIRUN_NEEDS_TARGET_ARGS --mca osc pt2pt)
  set(ASYNCPS_MPIRUN_TCP_ARGS --mca btl tcp,self)
  # every rank runs to its own end even after one exits non-zero (tests that check each rank's code)
  set(ASYNCPS_MPIRUN_EVERY_EXIT_ARGS --mca orte_abort_on_non_zero_status 0)
else()
  set(ASYNCPS_MPIRUN ${MPIEXEC_EXECUTABLE})  # hydra: no binding by default, any number of ranks
  set(ASYNCPS_MPIRUN_NEEDS_TARGET_ARGS)
  # Nothing: MPICH on one node has no TCP-only mode to test. UCX_TLS=tcp,self on one node makes
  # MPICH 4.0.2's MPI_Finalize hang (mpich#6596: UCX's TCP disconnect waits on a peer in the
  # final PMI barrier) in 1 run of 2 or 4, and MPIR_CVAR_NOLOCAL=1 as well. Between hosts,
  # over real TCP, is what tests/multihost runs through hydra.
  set(ASYNCPS_MPIRUN_TCP_ARGS)
  set(ASYNCPS_MPIRUN_EVERY_EXIT_ARGS -disable-auto-cleanup)
endif()
# the same launcher for the tests' scripts (ASYNCPS_TEST_MPIRUN, split on spaces), and what Open
# MPI needs as root (harmless elsewhere)
string(REPLACE ";" " " ASYNCPS_MPIRUN_STRING "${ASYNCPS_MPIRUN}")
set(ASYNCPS_MPI_TEST_ENV "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;ASYNCPS_TEST_MPIRUN=${ASYNCPS_MPIRUN_STRING}")
# The wrappers of this MPI for the installed package (cmake/asyncpsConfig.cmake.in), named for
# good: Debian's /usr/bin/mpicc is an alternative that may later point at the other MPI
# (mpicc -> /etc/alternatives/mpi -> mpicc.openmpi -> opal_wrapper), so the last link of the
# chain still named mpicc* is kept (opal_wrapper itself reads its name to know its language).
function(_asyncps_stable_wrapper path out)
  set(_keep "${path}")
  set(_p "${path}")
  foreach(_i RANGE 10)
    if(NOT IS_SYMLINK "${_p}")
      break()
    endif()
    file(READ_SYMLINK "${_p}" _t)
    if(NOT IS_ABSOLUTE "${_t}")
      get_filename_component(_d "${_p}" DIRECTORY)
      set(_t "${_d}/${_t}")
    endif()
    get_filename_component(_n "${_t}" NAME)
    if(_n MATCHES "^mpic")
      set(_keep "${_t}")
    endif()
    set(_p "${_t}")
  endforeach()
  set(${out} "${_keep}" PARENT_SCOPE)
endfunction()
_asyncps_stable_wrapper("${MPI_C_COMPILER}" ASYNCPS_MPI_C_WRAPPER)
if(MPI_CXX_COMPILER)
  _asyncps_stable_wrapper("${MPI_CXX_COMPILER}" ASYNCPS_MPI_CXX_WRAPPER)
else()
  set(ASYNCPS_MPI_CXX_WRAPPER "")
  get_filename_component(_dir "${ASYNCPS_MPI_C_WRAPPER}" DIRECTORY)
  get_filename_component(_name "${ASYNCPS_MPI_C_WRAPPER}" NAME)
  string(REPLACE "mpicc" "mpicxx" _name "${_name}")
  if(EXISTS "${_dir}/${_name}")
    set(ASYNCPS_MPI_CXX_WRAPPER "${_dir}/${_name}")
  endif()
endif()
message(STATUS "asyncps: MPI ${ASYNCPS_MPI_FAMILY} (${ASYNCPS_MPI_C_WRAPPER}), launcher ${MPIEXEC_EXECUTABLE}")

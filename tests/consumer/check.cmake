# Installs rcclx from SRC into BIN/prefix, then configures, builds and runs
# the consumer project against that prefix (find_package(rcclx CONFIG)).
file(REMOVE_RECURSE ${BIN})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
run(${CMAKE_COMMAND} -S ${SRC} -B ${BIN}/rcclx -DRCCLX_GPU=none -DRCCLX_BUILD_TESTS=OFF
    -DCMAKE_INSTALL_PREFIX=${BIN}/prefix)
run(${CMAKE_COMMAND} --install ${BIN}/rcclx)
run(${CMAKE_COMMAND} -S ${SRC}/tests/consumer -B ${BIN}/consumer -DCMAKE_PREFIX_PATH=${BIN}/prefix)
run(${CMAKE_COMMAND} --build ${BIN}/consumer)
run(${BIN}/consumer/consumer)

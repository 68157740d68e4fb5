# Runs a command (an mpirun job) and passes only if it exits with a non-zero status within
# MAX_SECONDS and, with -DEXPECT_OUTPUT=<regex>, its combined output matches the regex.
# Usage: cmake -DMAX_SECONDS=20 [-DEXPECT_OUTPUT=...] -P expect_job_fails_fast.cmake <command> <args...>
if(NOT MAX_SECONDS)
  message(FATAL_ERROR "expect_job_fails_fast.cmake needs -DMAX_SECONDS=<seconds>")
endif()

# In script mode CMAKE_ARGV0.. hold cmake's own arguments too: the command follows the script.
set(command "")
set(afterScript FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(afterScript)
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL CMAKE_CURRENT_LIST_FILE OR CMAKE_ARGV${i} MATCHES "expect_job_fails_fast\\.cmake$")
    set(afterScript TRUE)
  endif()
endforeach()
if(NOT command)
  message(FATAL_ERROR "expect_job_fails_fast.cmake: no command given after the script")
endif()

string(TIMESTAMP start "%s" UTC)
# The timeout kills a hung job, which then fails this check below instead of hanging CTest.
math(EXPR killAfter "${MAX_SECONDS} + 30")
execute_process(COMMAND ${command} RESULT_VARIABLE status TIMEOUT ${killAfter}
                OUTPUT_VARIABLE output ERROR_VARIABLE output)
message("${output}")
string(TIMESTAMP end "%s" UTC)
math(EXPR elapsed "${end} - ${start}")

message(STATUS "job ended with status '${status}' after ${elapsed} s (limit ${MAX_SECONDS} s)")
if(status STREQUAL "0")
  message(FATAL_ERROR "the job succeeded, but a rank was supposed to fail and fail it")
endif()
if(NOT status MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the job did not end by itself: ${status}")
endif()
if(elapsed GREATER MAX_SECONDS)
  message(FATAL_ERROR "the job failed, but only after ${elapsed} s (limit ${MAX_SECONDS} s)")
endif()
if(EXPECT_OUTPUT AND NOT output MATCHES "${EXPECT_OUTPUT}")
  message(FATAL_ERROR "the job's output does not match '${EXPECT_OUTPUT}'")
endif()

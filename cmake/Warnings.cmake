# Warnings are errors for our own code only (third-party headers come in as SYSTEM).
function(fk_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall -Xcompiler=-Wno-unused-parameter>)
endfunction()

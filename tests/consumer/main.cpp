// Uses the installed headers from plain host C++: scalar fp8 and status.
#include <rcclx/rcclx.h>
#include <stdio.h>

int main(void) {
  const uint8_t code = rcclx_fp8_encode(448.0f, RCCLX_FP8_E4M3FN);
  const float back = rcclx_fp8_decode(code, RCCLX_FP8_E4M3FN);
  printf("e4m3fn(448) = 0x%02x -> %g; %s\n", code, back, rcclx_status_string(RCCLX_SUCCESS));
  return (code == 0x7e && back == 448.0f) ? 0 : 1;
}

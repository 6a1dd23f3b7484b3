/*
 * adapter.c - the callbacks that have one signature in every ABI version.
 */
#include "abi/adapter.h"

#include "core/plugin.h"

prof_result_t ins_adapter_stop(void *handle) {
  ins_event_stop(handle);
  return PROF_SUCCESS;
}

prof_result_t ins_adapter_record(void *handle, int state, union prof_state_args *args) {
  if (state == PROF_STATE_KERNEL_CH_STOP)
    ins_kernel_record_stop(handle, args ? args->kernelCh.pTimer : 0);
  return PROF_SUCCESS;
}

prof_result_t ins_adapter_finalize(void *context) { return ins_plugin_finalize(context); }

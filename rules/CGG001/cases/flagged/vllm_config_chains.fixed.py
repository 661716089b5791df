# Receivers reached through a vllm_config: the fix uses its scheduler_config.
class ProfilingWorkerMixin:
    def minimal_blocks(self):
        num_blocks = (
            min(self.vllm_config.scheduler_config.max_num_seqs, self.vllm_config.compilation_config.max_cudagraph_capture_size)
            or 1
        )  # expect: CGG001
        return num_blocks


def minimal_blocks(vllm_config):
    num_blocks = (
        min(vllm_config.scheduler_config.max_num_seqs, vllm_config.compilation_config.max_cudagraph_capture_size)
        or 1
    )  # expect: CGG001
    return num_blocks


def from_context():
    min_blocks = (
        min(get_current_vllm_config().scheduler_config.max_num_seqs, get_current_vllm_config().compilation_config.max_cudagraph_capture_size)
        or 1
    )  # expect: CGG001
    return min_blocks

# Receivers reached through a vllm_config: the fix uses its scheduler_config.
class ProfilingWorkerMixin:
    def minimal_blocks(self):
        num_blocks = self.vllm_config.compilation_config.max_cudagraph_capture_size or 1  # expect: CGG001
        return num_blocks


def minimal_blocks(vllm_config):
    num_blocks = vllm_config.compilation_config.max_cudagraph_capture_size  # expect: CGG001
    return num_blocks


def from_context():
    min_blocks = get_current_vllm_config().compilation_config.max_cudagraph_capture_size or 1  # expect: CGG001
    return min_blocks

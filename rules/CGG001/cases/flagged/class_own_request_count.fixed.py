# A class that is not a model runner but keeps its own request count.
class ProfilingCacheBuilder:
    def __init__(self, compilation_config, max_num_seqs):
        self.compilation_config = compilation_config
        self.max_num_seqs = max_num_seqs

    def blocks(self):
        num_blocks = (
            min(self.max_num_seqs, self.compilation_config.max_cudagraph_capture_size)
            or 1
        )  # expect: CGG001
        return num_blocks


def with_local_request_count(compilation_config, max_num_seqs):
    num_blocks = min(max_num_seqs, compilation_config.max_cudagraph_capture_size) or 1  # expect: CGG001
    return num_blocks

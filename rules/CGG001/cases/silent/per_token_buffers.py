# Buffers and tables that count tokens are rightly sized by the capture size.
class GPUModelRunner:
    def __init__(self, vllm_config):
        self.compilation_config = vllm_config.compilation_config
        max_size = self.compilation_config.max_cudagraph_capture_size
        self.query_start_loc_table = [0] * (max_size + 1)
        self.hidden_states = torch.zeros(max_size, 4096)
        self.max_query_tokens = 8192
        self.num_tokens_padded = max(self.max_query_tokens, self.compilation_config.max_cudagraph_capture_size or 0)
        self.token_buffer_len = max(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)
        self.positions = torch.zeros(self.token_buffer_len, dtype=torch.int64)

    def fits_in_graph(self, num_tokens):
        return num_tokens <= self.cudagraph_batch_sizes[-1]

    def pad(self, num_tokens):
        if self.cudagraph_batch_sizes and num_tokens <= self.cudagraph_batch_sizes[-1]:
            return bisect(self.cudagraph_batch_sizes, num_tokens)
        return num_tokens

# Nothing here says how many requests there are: reported, but no automatic fix.
def profiling_blocks(compilation_config):
    min_blocks = compilation_config.max_cudagraph_capture_size or 1  # expect: CGG001
    return min_blocks

# Patch scripts that replace the buggy line mention it only inside strings.
# min_blocks = self.compilation_config.max_cudagraph_capture_size or 1
OLD = "min_blocks = self.compilation_config.max_cudagraph_capture_size or 1"
NEW = """min_blocks = (
    min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size) or 1
)"""


def patch(path):
    text = open(path).read()
    min_blocks = "self.compilation_config.max_cudagraph_capture_size or 1"
    num_blocks = f"{min_blocks}"
    return text.replace(OLD, NEW), num_blocks

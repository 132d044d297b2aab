"""Exercise 10, accounting a training run: wrong answers written from the student edition alone (see __init__.py)."""
from tests.wrong_answers import Wrong

_PARAMS = '''
def param_count(shape):
    V, s, d, L, f = shape.vocab_size, shape.context_length, shape.d_model, shape.num_layers, shape.d_ff
    embeddings = {embeddings}
    block = {norms} + {attention} + {mlp}
    return embeddings + L * block + {final}
'''
_P = dict(embeddings="V * d + s * d", norms="2 * 2 * d", attention="(d * 3 * d + 3 * d) + (d * d + d)",
          mlp="(d * f + f) + (f * d + d)", final="2 * d")
_FLOPS = '''
def training_flops_per_token(shape):
    V, s, d, L, h, f = shape.vocab_size, shape.context_length, shape.d_model, shape.num_layers, shape.num_heads, shape.d_ff
    linears = {linears}
    attention = {attention}
    head = {head}
    forward = L * (linears + attention) + head
    return {result}
'''
_F = dict(linears="2 * (d * 3 * d + d * d + d * f + f * d)", attention="2 * 2 * s * d", head="2 * d * V", result="3 * forward")
_MEMORY = '''
def memory_per_gpu(shape, num_gpus, zero_stage):
    P = {P}
    N = num_gpus
    per_stage = {{0: 2 * P + 2 * P + 12 * P, 1: 2 * P + 2 * P + 12 * P / N, 2: {stage2}, 3: {stage3}}}
    if zero_stage not in per_stage:
        {invalid}
    return {result}
'''
_MG = dict(P="param_count(shape)", stage2="2 * P + (2 * P + 12 * P) / N", stage3="(2 * P + 2 * P + 12 * P) / N",
           invalid='raise ValueError(f"no ZeRO stage {zero_stage}")', result="float(per_stage[zero_stage])")
_DAYS = '''
def training_days(shape, tokens, num_gpus, device_name, mfu):
    peak = peak_flops(device_name, {dtype})
    {guard}
    flops = {flops}
    return {result}
'''
_D = dict(dtype="torch.bfloat16", guard="if peak is None:\n        return None",
          flops="tokens * training_flops_per_token(shape)", result="flops / (num_gpus * peak * mfu) / 86400")

WRONG = [
    Wrong("param_count", "no position embedding", r"position", _PARAMS.format(**{**_P, "embeddings": "V * d"})),
    Wrong("param_count", "the tied head counted as a table of its own", r"tied|head", _PARAMS.format(**{**_P, "embeddings": "2 * V * d + s * d"})),
    Wrong("param_count", "no biases on the Linears", r"bias", _PARAMS.format(**{**_P, "attention": "d * 3 * d + d * d", "mlp": "d * f + f * d"})),
    Wrong("param_count", "one LayerNorm per block", r"LayerNorm", _PARAMS.format(**{**_P, "norms": "2 * d"})),
    Wrong("param_count", "the MLP as 4d wide, d_ff ignored", r"d_ff|\bf\b|4 ?x ?d", _PARAMS.format(**{**_P, "mlp": "(d * 4 * d + 4 * d) + (4 * d * d + d)"})),
    Wrong("param_count", "a LayerNorm without its bias", r"bias|weight and a bias", _PARAMS.format(**{**_P, "norms": "2 * d", "final": "d"})),
    Wrong("param_count", "no final LayerNorm", r"final", _PARAMS.format(**{**_P, "final": "0"})),
    Wrong("training_flops_per_token", "the rule of thumb, 6 x parameters", r"rule of thumb|6 x param", """
def training_flops_per_token(shape):
    return 6 * param_count(shape)
"""),
    Wrong("training_flops_per_token", "attention over half the square, as the mask would suggest", r"mask|half|full square",
          _FLOPS.format(**{**_F, "attention": "2 * s * d"})),
    Wrong("training_flops_per_token", "attention as one matmul: the weights @ v forgotten",
          r"one of (its|attention's) two|two matmuls|second matmul|weights ?@ ?v|both (attention )?matmuls",
          _FLOPS.format(**{**_F, "attention": "2 * s * d"})),
    Wrong("training_flops_per_token", "the tied head forgotten", r"head", _FLOPS.format(**{**_F, "head": "0"})),
    Wrong("training_flops_per_token", "GPT2_SMALL's numbers instead of the shape it was given",
          r"GPT2_SMALL|argument|shape (you|it) (was|were|is) given|the given shape|its shape|other shape", """
def training_flops_per_token(shape):
    V, s, d, L, f = GPT2_SMALL.vocab_size, GPT2_SMALL.context_length, GPT2_SMALL.d_model, GPT2_SMALL.num_layers, GPT2_SMALL.d_ff
    forward = L * (2 * (d * 3 * d + d * d + d * f + f * d) + 2 * 2 * s * d) + 2 * d * V
    return 3 * forward
"""),
    Wrong("training_flops_per_token", "one backward matmul per forward matmul", r"twice|both inputs|two inputs",
          _FLOPS.format(**{**_F, "result": "2 * forward"})),
    Wrong("training_flops_per_token", "the first block's input gradient skipped, as if it were data",
          r"first block|embedding|input gradient|x is data|data", _FLOPS.format(**{**_F, "result": "3 * forward - 2 * d * 3 * d"})),
    Wrong("training_flops_per_token", "attention for a whole sequence, not per token", r"per token|whole sequence|share",
          _FLOPS.format(**{**_F, "attention": "2 * 2 * s * s * d"})),
    Wrong("training_flops_per_token", "biases counted as matmul FLOPs", r"bias", _FLOPS.format(**{**_F,
          "linears": "2 * (d * 3 * d + 3 * d + d * d + d + d * f + f + f * d + d)"})),
    Wrong("training_flops_per_token", "the head's backward forgotten", r"head.{0,40}backward|backward.{0,40}head|tied head",
          _FLOPS.format(**{**_F, "result": "3 * forward - 4 * d * V"})),
    Wrong("memory_per_gpu", "14 bytes: the master copy in bf16", r"master", _MEMORY.format(**{**_MG,
          "result": "float(per_stage[zero_stage]) * 14 / 16"})),
    Wrong("memory_per_gpu", "stage 1 shards everything", r"stage 1|only the optimizer state", _MEMORY.format(**{**_MG,
          "result": "float(per_stage[zero_stage] if zero_stage != 1 else per_stage[3])"})),
    Wrong("memory_per_gpu", "no ValueError for an unknown stage", r"ValueError", _MEMORY.format(**{**_MG, "invalid": "return 0.0"})),
    Wrong("memory_per_gpu", "an int comes back for whole numbers", r"float", _MEMORY.format(**{**_MG,
          "result": "int(per_stage[zero_stage]) if per_stage[zero_stage] == int(per_stage[zero_stage]) else per_stage[zero_stage]"})),
    Wrong("memory_per_gpu", "stage 2 shards the gradients but not the optimizer state", r"optimizer state|stage 2", _MEMORY.format(**{**_MG,
          "stage2": "2 * P + 2 * P / N + 12 * P"})),
    Wrong("memory_per_gpu", "GPT-2 small's count whatever the shape", r"param_count|shape|task 1", _MEMORY.format(**{**_MG, "P": "124_439_808"})),
    Wrong("memory_per_gpu", "stage 3 keeps the weights whole", r"weights", _MEMORY.format(**{**_MG, "stage3": "2 * P + (2 * P + 12 * P) / N"})),
    Wrong("training_days", "hours", r"hours", _DAYS.format(**{**_D, "result": "flops / (num_gpus * peak * mfu) / 3600"})),
    Wrong("training_days", "the MFU left out", r"MFU", _DAYS.format(**{**_D, "result": "flops / (num_gpus * peak) / 86400"})),
    Wrong("training_days", "tokens divided by the context length", r"sequences|per token|tokens", _DAYS.format(**{**_D,
          "flops": "tokens / shape.context_length * training_flops_per_token(shape)"})),
    Wrong("training_days", "the fp32 peak", r"fp32|bf16|bfloat16|dtype", _DAYS.format(**{**_D, "dtype": "torch.float32"})),
    Wrong("training_days", "no None check", r"None", _DAYS.format(**{**_D, "guard": "pass"})),
    Wrong("training_days", "multiplies by 6 again", r"\b6\b|already counts|again", _DAYS.format(**{**_D,
          "flops": "6 * tokens * training_flops_per_token(shape)"})),
    Wrong("training_days", "the peak divided by the MFU", r"MFU", _DAYS.format(**{**_D, "result": "flops / (num_gpus * peak / mfu) / 86400"})),
    Wrong("training_days", "the dtype as the string 'bf16'", r"torch\.bfloat16|dtype", _DAYS.format(**{**_D, "dtype": '"bf16"'})),
    Wrong("run_mfu", "a percentage", r"percent", "run_mfu = 6 * 524288 * 124e6 / 1.2 / (8 * 312e12) * 100\n"),
    Wrong("run_mfu", "2 x tokens x parameters: forward only", r"\b6\b|backward|forward", "run_mfu = 2 * 524288 * 124e6 / 1.2 / (8 * 312e12)\n"),
    Wrong("run_mfu", "one GPU's peak", r"\b8\b|GPUs|eight", "run_mfu = 6 * 524288 * 124e6 / 1.2 / 312e12\n"),
    Wrong("run_mfu", "the step's time left out", r"1\.2|seconds|time", "run_mfu = 6 * 524288 * 124e6 / (8 * 312e12)\n"),
    Wrong("run_mfu", "a TFLOP as 10^9", r"TFLOP|10\^12", "run_mfu = 6 * 524288 * 124e6 / 1.2 / (8 * 312e9)\n"),
    Wrong("gpt3_days", "hours", r"hours", "gpt3_days = 6 * 175e9 * 300e9 / (1024 * 312e12 * 0.4) / 3600\n"),
    Wrong("gpt3_days", "the MFU left out", r"MFU", "gpt3_days = 6 * 175e9 * 300e9 / (1024 * 312e12) / 86400\n"),
    Wrong("gpt3_days", "multiplies by the MFU", r"MFU", "gpt3_days = 6 * 175e9 * 300e9 * 0.4 / (1024 * 312e12) / 86400\n"),
    Wrong("gpt3_days", "2 x params x tokens", r"\b6\b|backward", "gpt3_days = 2 * 175e9 * 300e9 / (1024 * 312e12 * 0.4) / 86400\n"),
    Wrong("gpt3_days", "seconds", r"seconds", "gpt3_days = 6 * 175e9 * 300e9 / (1024 * 312e12 * 0.4)\n"),
    Wrong("gpt3_days", "1024 rounded to 1000 and 312 to 300: the roundings add up past 5%", r"near miss|close|round",
          "gpt3_days = 6 * 175e9 * 300e9 / (1000 * 300e12 * 0.4) / 86400\n"),
]

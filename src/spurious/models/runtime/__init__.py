"""The transformer runtime below the sentence encoder and fine-tuning.

What :mod:`spurious.features.encoder` and :mod:`spurious.models.finetune` both need to run
a Hugging Face model, in one place (torch is imported only when a function runs):

- :mod:`~spurious.models.runtime.threads`: the lazy torch import (:func:`import_torch`),
  the thread-count context manager (:func:`torch_threads`) and the worker-thread map
  (:func:`thread_map`);
- :mod:`~spurious.models.runtime.hardware`: device and autocast precision
  (:func:`resolve_device`, :func:`resolve_precision`, :func:`cpu_supports_bf16`,
  :func:`inference_context`; :func:`use_device`, the run's device, which every
  ``device="auto"`` inside it resolves to);
- :mod:`~spurious.models.runtime.loading`: which model (:func:`resolve_model`,
  :func:`default_model_path`) and quiet loading (:func:`quiet_transformers`);
- :mod:`~spurious.models.runtime.batches`: the batched no-grad forward pass
  (:func:`length_buckets`, :func:`sorted_batches`, :func:`cpu_workers`,
  :func:`forward_batches`).
"""

from spurious.models.runtime.batches import (
    CPU_TOKENS_PER_BATCH,
    cpu_workers,
    forward_batches,
    length_buckets,
    sorted_batches,
)
from spurious.models.runtime.hardware import (
    PRECISIONS,
    amp_context,
    auto_device,
    cpu_supports_bf16,
    inference_context,
    resolve_device,
    resolve_precision,
    run_device,
    use_device,
)
from spurious.models.runtime.loading import (
    MODEL_ALIASES,
    default_model_path,
    quiet_transformers,
    resolve_model,
)
from spurious.models.runtime.threads import (
    import_torch,
    openmp_backend,
    thread_map,
    torch_threads,
)

__all__ = [
    "CPU_TOKENS_PER_BATCH",
    "MODEL_ALIASES",
    "PRECISIONS",
    "amp_context",
    "auto_device",
    "cpu_supports_bf16",
    "cpu_workers",
    "default_model_path",
    "forward_batches",
    "import_torch",
    "inference_context",
    "length_buckets",
    "openmp_backend",
    "quiet_transformers",
    "resolve_device",
    "resolve_model",
    "resolve_precision",
    "run_device",
    "sorted_batches",
    "thread_map",
    "torch_threads",
    "use_device",
]

"""A local transformers causal LM as a text backend (a directory; nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path

from .base import ChatRequest


class TransformersBackend:
    name = "transformers"

    def __init__(self, model_dir: str | Path, device: str = "cpu", max_new_tokens: int = 256):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        self.model = AutoModelForCausalLM.from_pretrained(str(model_dir), local_files_only=True).to(device).eval()
        self.max_new_tokens = max_new_tokens

    def _text(self, request: ChatRequest) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(request.messages(), tokenize=False, add_generation_prompt=True)
        return (
            "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in request.messages())
            + "<|im_start|>assistant\n"
        )

    def complete(self, request: ChatRequest) -> str:
        import torch

        inputs = self.tokenizer(self._text(request), return_tensors="pt", add_special_tokens=False).to(
            self.model.device
        )
        if request.seed is not None:
            torch.manual_seed(request.seed)
        with torch.no_grad():
            out = self.model.generate(
                **inputs,
                max_new_tokens=min(self.max_new_tokens, request.max_tokens),
                do_sample=request.temperature > 0,
                temperature=request.temperature or None,
                pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
            )
        return self.tokenizer.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)

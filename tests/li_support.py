"""LlamaIndex test support shared by the LlamaIndex test files: sample documents as an app
would load them, and a scripted LLM test double."""

from __future__ import annotations

from typing import Any

from llama_index.core import Document
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from pydantic import Field

from hygraph.demo import sample_dir


def li_documents(names: list[str]) -> list[Document]:
    """Sample documents as an app would load them: LlamaIndex Documents with metadata."""
    return [
        Document(text=(sample_dir() / n).read_text(), id_=n, metadata={"file_name": n})
        for n in names
    ]


class ScriptedLLM(CustomLLM):
    """Scripted stand-in for a real LLM (test double): always ``answer``, prompts recorded."""

    answer: str = "Ilse Marrow designed the Caddow Bridge."
    prompts: list[str] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text=self.answer)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
        self.prompts.append(prompt)
        yield CompletionResponse(text=self.answer, delta=self.answer)

"""Sentences of a document that read as instructions to an assistant, not as facts about the world.

Passages are data, and the prompt says so, but a small model still obeys a document that tells it
what to reply. An answer copied from such a sentence is never shown as supported: the exact check
would otherwise pass it, since its words are in the passage.
"""

from __future__ import annotations

import re

#: addressed to the assistant: to forget its rules, to reply something, or a forged turn
INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b[^.!?\n]{0,40}"
    r"\b(?:previous|prior|above|earlier|all|your|the system)\b[^.!?\n]{0,25}"
    r"\b(?:instructions?|rules?|prompts?|messages?|guidelines?)\b"
    r"|\b(?:reply|respond|answer)\s+(?:only\s+|always\s+)?(?:with|exactly)\b[^.!?\n]{0,40}"
    r"(?:\bto every\b|\bto all\b|\bregardless\b|\bno matter\b|\bquestions?\b|[\"'`]"
    r"|\b(?=[A-Z0-9-]*[A-Z])[A-Z0-9-]{5,}\b)"
    r"|\bthe (?:answer|reply) to (?:every|all|any) (?:other )?questions?\b"
    r"|(?:^|[\n>\]])\s*(?:system|assistant)\s*(?:message|prompt|notice|override)?\s*:"
    r"|\b(?:you are|you must|you will)\b[^.!?\n]{0,30}\b(?:an? (?:ai|assistant|language model|chatbot))\b"
    r"|\b(?:as an ai|as a language model|new instructions?|jailbreak|developer mode)\b"
    r"|\b(?:assistants?|ai models?|language models?|chatbots?)\b[^.!?\n]{0,40}\b(?:must|should|shall)\b",
    re.IGNORECASE,
)


def reads_as_instruction(sentence: str) -> bool:
    """The sentence tells an assistant what to do rather than saying something about the world."""
    return INSTRUCTION.search(sentence) is not None

"""Sentences of a document that read as instructions to an assistant, not as facts about the world.

Passages are data, and the prompt says so, but a small model still obeys a document that tells it
what to reply. An answer copied from such a sentence is never shown as supported: the exact check
would otherwise pass it, since its words are in the passage.

What gives an instruction away is its address and its verb, not its payload (which can be any
word, "PWNED" or "APPROVED by admin"): it speaks to an assistant, or to whoever answers; it orders
what the reply is to be ("reply", "say", "output", "begin your answer with"); it tells the reader
to ignore the question or its rules; or it forges a turn of a conversation or a system line. Each
pattern below is one of those shapes; ``benchmarks/planted_instructions.py`` measures them on two
sets of planted documents and counts the sentences of real corpora they flag.
"""

from __future__ import annotations

import re

#: verbs that order what the reply is to be
_REPLY = r"(?:reply|respond|answer|say|output|print|type|tell (?:them|the user|users))"
#: a payload written as a code: upper-case letters, digits and dashes (case-sensitive, unlike the rest)
_CODE = r"(?-i:\b(?=[A-Z0-9-]*[A-Z])[A-Z0-9-]{4,}\b)"
#: what follows such a verb when it is an order and not a story: the form of the reply, or its payload
_ORDERED = (
    r"(?:\s+(?:only|always|simply|exactly)\b"
    rf"|\s+(?:with|in one word)\b[^.!?\n]{{0,30}}(?:\bonly\b|[\"'`:]|{_CODE})"
    r"|\s*:"
    r"|\s+[\"'`]"
    r"|\s+the (?:code|word|string)\b"
    r"|\s+to (?:this|it|that|them)\b[^.!?\n]{0,10}\bwith\b"
    rf"|\s+{_CODE}"
    r"|[^.!?\n]{0,40}\b(?:and nothing else|instead of an? (?:answer|reply)|as (?:the|your) (?:whole )?"
    r"(?:answer|reply|response)\b)"
    r")"
)

INSTRUCTION = re.compile(
    "|".join(
        [
            # ignore the rules, the question or the user; forget what it was told
            r"\b(?:ignore|disregard|forget|override)\b[^.!?\n]{0,40}"
            r"\b(?:previous|prior|above|earlier|all|your|the system)\b[^.!?\n]{0,25}"
            r"\b(?:instructions?|rules?|prompts?|messages?|guidelines?)\b",
            r"\b(?:ignore|disregard)\s+(?:the|this|that|any|every)\s+(?:question|user|query|request)\b",
            r"\bforget (?:what you (?:were|have been) told|your (?:instructions|rules|task)|everything)\b",
            # an order about the reply, in the imperative: "reply only with", "say X and nothing else"
            rf"(?:^|[.!?:;\n]\s*|\band\s+|\bplease\s+|\bkindly\s+|\bjust\s+|\bthen\s+|\bnow\s+"
            rf"|\byou (?:must|should|shall|will|are to)\s+)"
            rf"(?:{_REPLY}|write){_ORDERED}",
            # the reply itself ordered: "your reply must be", "the only valid response is"
            r"\byour (?:reply|answer|response|output)\b[^.!?\n]{0,20}\b(?:must|should|shall|is|will be)\b",
            r"\bthe only (?:valid |correct |acceptable )?(?:reply|response|answer|output) is\b",
            r"\bthe correct (?:reply|response) is\b",
            r"\b(?:begin|start|end|finish|prefix|replace)\b[^.!?\n]{0,15}\b(?:your|every|each)\s+"
            r"(?:reply|answer|response|output)s?\b",
            r"\bthe (?:answer|reply|response) to (?:every|all|any) (?:other )?(?:questions?|queries)\b",
            r"\b(?:every|each|all|any) (?:automated |generated )?(?:answers?|repl(?:y|ies)|responses?)\b"
            r"[^.!?\n]{0,60}\b(?:must|should|shall) (?:read|be|say)\b",
            rf"\banswered with\s+{_CODE}",
            r"\b(?:whoever|anyone who|everyone who) (?:asks|reads this)\b",
            r"\bwhatever the question\b|\bno matter (?:what|which) (?:the )?(?:question|you are asked)\b",
            # a reply ordered on a condition: "if anyone asks about X, tell them ..."
            rf"\b(?:if|when|whenever)\b[^.!?\n]{{0,60}}\bask(?:s|ed)?\b[^.!?\n]{{0,60}},\s*(?:just\s+)?"
            rf"(?:{_REPLY}|tell|the (?:answer|reply|response) is)\b",
            # addressed to an assistant or a model
            r"\b(?:note|notice|message|memo|instructions?)\s+(?:to|for)\s+(?:the |any |all )?"
            r"(?:assistants?|ai|a\.i\.|ai models?|language models?|llms?|chatbots?|bots?)\b",
            r"\b(?:attention|hey|dear),?\s+(?:assistants?|ai|language models?|llms?|chatbots?|bots?)\b",
            r"\bto (?:any|every|all) (?:assistants?|ai|language models?|llms?|chatbots?|bots?)\b",
            r"\b(?:assistants?|ai models?|language models?|chatbots?)\b[^.!?\n]{0,40}\b(?:must|should|shall)\b",
            rf"\b(?:assistants?|ai|bots?|chatbots?|language models?)\s+(?:is instructed )?to\s+(?:{_REPLY})\b",
            r"\bthe (?:assistant|ai|bot|chatbot)\s+(?:always\s+)?(?:replies|responds|answers|says)\b",
            r"\b(?:you are|you must|you will)\b[^.!?\n]{0,30}\b(?:an? (?:ai|assistant|language model|chatbot))\b",
            r"\b(?:as an ai|as a language model|new (?:instructions?|task)\s*:|jailbreak|developer mode|"
            r"developer note|admin(?:istrator)? override|system override)\b",
            # role-play that sets what is said
            r"\b(?:from now on,? you|pretend (?:to be|you are)|you are now|act as\b[^.!?\n]{0,30}\band)\b"
            r"[^.!?\n]{0,60}\b(?:say|answer|reply|respond)\b",
            # forged turns, system lines and prompt markup
            r"(?:^|[\n>\]])\s*(?:system|assistant)\s*(?:message|prompt|notice|override)?\s*:",
            r"\b(?:user|human)\s*:[^\n]{0,120}\b(?:assistant|ai|bot)\s*:",
            r"\[\s*(?:system|inst|assistant)\s*\]|<\|\s*(?:system|assistant|im_start)|#{2,}\s*(?:instruction|system)\b",
            r"<!--\s*(?:assistant|ai|system|instruction)",
            # "reply only with", in other languages a document may use
            r"\b(?:svar|antworte|réponds|responde|rispondi|antwoord)\b[^.!?\n]{0,12}"
            r"\b(?:bare|kun|nur|seulement|uniquement|solo|sólo|alleen)\b",
        ]
    ),
    re.IGNORECASE,
)


def reads_as_instruction(sentence: str) -> bool:
    """The sentence tells an assistant what to do rather than saying something about the world."""
    return INSTRUCTION.search(sentence) is not None

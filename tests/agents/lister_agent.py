"""An agent that shows the model its project, as Gemini CLI does in its first prompt: the
sorted names in its working directory (folders marked `/`) and in `specs/`, on the real
`openai` SDK (one chat completion; it prints the reply)."""

import os
from pathlib import Path

from openai import OpenAI


def listing(folder: Path) -> str:
    return ", ".join(sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir()))


here = Path.cwd()
project = f"project: {listing(here)}\nspecs: {listing(here / 'specs')}"
reply = OpenAI().chat.completions.create(
    model="gpt-4.1",
    messages=[
        {"role": "system", "content": f"You are a coding agent.\n{project}"},
        {"role": "user", "content": os.environ.get("FLOWPROOF_PROMPT", "What is here?")},
    ],
)
print(reply.choices[0].message.content)

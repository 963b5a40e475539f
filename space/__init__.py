"""The Space's own code: one module per job of the page, each testable without building the page.

``app.py`` lays the page out and wires it to these; nothing here imports ``app.py``. This package's ``__init__``
imports nothing, so that the PDF job's process (:mod:`space.job`) loads ``pipeline/`` only, never Gradio or torch.
"""

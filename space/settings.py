"""The Space's settings, read once from the environment (docs/space.md lists them).

Handlers read them as ``settings.NAME`` when they run, never copied at import, so that one place holds each value
(and a test can change it for one call).
"""

import os

GPU_DURATION = int(os.environ.get("GPU_DURATION", "20"))
"""Seconds of ZeroGPU requested per classify call; quota is charged on this, so keep it tight."""
MAX_FILE_SIZE = os.environ.get("MAX_FILE_SIZE", "100mb")
"""Upload limit for any file (Gradio refuses bigger uploads before a handler runs)."""
MAX_UNPACKED_MB = int(os.environ.get("MAX_UNPACKED_MB", "2048"))
"""Most megabytes of PDFs unpacked from the zips of one request (the Space's disk is shared by everyone)."""
MAX_PAGES = int(os.environ.get("MAX_PAGES", "2000"))
"""Most pages per PDF job: more is refused at once (an archive belongs to the CLI)."""
MAX_JOB_SECONDS = float(os.environ.get("MAX_JOB_SECONDS", "600"))
"""A PDF job stops after this long and returns what it has done, so the queue keeps moving."""
JOB_GRACE_S = float(os.environ.get("JOB_GRACE_S", "120"))
"""A PDF job still running this long after ``MAX_JOB_SECONDS`` (a page that never ends, stuck in MuPDF) has its
process killed: it gets an error, not its partial zip. The job's own stop waits for the end of a page range."""
PDF_JOBS = int(os.environ.get("PDF_JOBS", "2"))
"""PDF jobs at once: two, so that a short job is not stuck behind a long one (each uses one core)."""
MIN_FREE_DISK_MB = int(os.environ.get("MIN_FREE_DISK_MB", "2048"))
"""New PDF jobs are refused while the disk has less free space than this."""
CACHE_MAX_AGE_S = int(os.environ.get("CACHE_MAX_AGE_S", "1800"))
"""Uploads and results are deleted this long after they were made (checked every tenth of it)."""
WORK_MAX_AGE_S = 3600
"""Work folders left by a job that ended abnormally are removed after this long; a finished job removes its own."""
CAPTIONER = os.environ.get("CAPTIONER", "").strip()
"""An image-to-text model (a Hub id or a folder: BLIP, GIT, Florence-2) whose words fill ``{caption}`` in the PDF
tab's captions; none by default. Loaded per page of a job inside ``@spaces.GPU`` (``space.dataset.describe``)."""
CAPTION_GPU_DURATION = int(os.environ.get("CAPTION_GPU_DURATION", "30"))
"""Seconds of ZeroGPU requested per page captioned: loading the model is most of it."""

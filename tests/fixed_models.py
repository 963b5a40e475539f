"""Tiny models with a fixed answer, for tests that need a given verdict (lumpy skin, not cattle) through the real
load → infer → verdict path, and an obviously fake contacts configuration."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from test_models import tiny_vit_config
from transformers import ViTForImageClassification, ViTImageProcessor

TRIAGE_LABELS = ["lumpy_skin", "normal_skin", "fmd"]
LABELS = {i: label for i, label in enumerate([*TRIAGE_LABELS, "not_cattle"])}
FAKE_CONTACTS = {
    "Testland North": [{"name": {"en": "Test helpline", "hi": "टेस्ट हेल्पलाइन"}, "phone": "+00 0000 0001"}],
    "Testland South": [{"name": "Test district vet", "phone": "+00 0000 0002", "note": "test hours"}],
}
"""Two made-up regions with numbers no phone network gives out (country code 00)."""


def save_fixed_model(folder: Path, answer: str) -> Path:
    """A 1-layer ViT with the triage labels, a cattle gate and a ``triage`` policy that answers ``answer`` for any
    photo: its readout's weights are zero and its bias favours that label (P ≈ 0.96 of the triage labels)."""
    config = tiny_vit_config(LABELS)
    config.triage = {
        "gate_label": "not_cattle",
        "gate_threshold": 0.5,
        "triage_labels": TRIAGE_LABELS,
        "temperature": 1.0,
        "alerts": {"lumpy_skin": 0.5, "fmd": 0.5},
        "answer_threshold": 0.8,
    }
    torch.manual_seed(0)
    model = ViTForImageClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.zero_()
        model.classifier.bias[config.label2id[answer]] = 4.0
    model.save_pretrained(folder)
    ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder


def write_contacts(folder: Path, contacts: dict[str, list[dict[str, object]]] = FAKE_CONTACTS) -> Path:
    path = folder / "contacts.json"
    path.write_text(json.dumps(contacts, ensure_ascii=False), encoding="utf-8")
    return path

"""Calibration: fitting the evidence gate, on labelled questions or on a namespace's own documents."""

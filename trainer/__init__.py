"""Distributed RetinaNet training for Run:ai jobs: ``python -m trainer --help``; see README.md."""

"""The app's screens: jobs (home), describe, logs, submit, profiles, and the dialogs."""

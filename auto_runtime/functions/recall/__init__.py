"""The recall type: documents whose module folds the playbook's events into a view, and runs that answer from it."""

"""The Django project. The Celery app (clinreview/celery.py) is not loaded here, so that a web
process or a management command that sends no task does not pay for it: `celery -A clinreview`
finds it, the task modules load it (annotations/tasks/__init__.py), and services send through
annotations/services/dispatch.py, which loads it with the first message."""

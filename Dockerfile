# ClinReview: one image for the web server and the Celery workers.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 VAR_DIR=/data
WORKDIR /app

COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt

COPY . .
# collectstatic needs a key only to import settings; the real one comes from the environment.
RUN DEBUG=0 SECRET_KEY=build-only python manage.py collectstatic --noinput \
    && useradd --create-home clinreview && mkdir -p /data && chown clinreview /data
USER clinreview
VOLUME ["/data"]
EXPOSE 8000

CMD ["gunicorn", "clinreview.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--threads", "4", "--timeout", "120"]

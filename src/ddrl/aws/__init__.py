"""AWS: SageMaker training backend, the container entry points, endpoint deployment.

Credentials come only from boto3's standard chain (environment, shared config/credentials
files, SSO, instance or task role). Nothing in this package reads, stores or logs them.
"""

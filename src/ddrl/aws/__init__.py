"""AWS: SageMaker training backend, the container entry points, endpoint deployment.

Credentials come only from boto3's standard chain (environment, shared config/credentials
files, SSO, instance or task role). Nothing in this package reads, stores or logs them.
"""


def boto3():
    """The boto3 module, or an error that says which extra installs it (boto3 is not a core
    dependency: only this package needs it)."""
    try:
        import boto3 as module
    except ImportError:
        from ddrl.errors import DdrlError

        raise DdrlError("AWS commands need boto3: pip install 'ddrl[aws]'") from None
    return module

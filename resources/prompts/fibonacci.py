def fibonacci(n):
    """Return the n-th Fibonacci number."""

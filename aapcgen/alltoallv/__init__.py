"""alltoallv"""

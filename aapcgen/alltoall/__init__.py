"""alltoall"""

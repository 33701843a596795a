struct s {
	int x;
#endif
	int y;
};

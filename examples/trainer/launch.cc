int main_placeholder_launch();
